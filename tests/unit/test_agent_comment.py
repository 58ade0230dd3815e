"""`railyard agent` by comment, the reading part: which comments show the outcome of the one
the agent posted. Only railyard's own app counts (a person can type any marker, another app can
post one), the state comes only from the status comment's last hidden line, and an answer only
when it names the posted comment."""

from __future__ import annotations

from typing import Any

import httpx

from app.cli.agent_comment import latest_revision, outcome_in, run_comment, shown_status
from app.cli.agent_core import EXIT_APPLIED, EXIT_REFUSED, EXIT_USAGE, Options
from app.contracts.effect_types import status_key
from app.store.effects import marker
from app.views.status_json import answer_line, status_line

RAILYARD = {"id": 1, "slug": "railyard"}
OTHER_APP = {"id": 2, "slug": "helper"}
POSTED = {"id": 501, "user": {"id": 77, "login": "cody"}}
CLAIMED = {"work": "claimed", "revision": 5, "attempt": 1, "claimant_id": 77, "delivery": None}
STATUS_END = marker(status_key("acme/web", 12))


def _options(action: str = "claim") -> Options:
    return Options(action, "acme/web", 12, "t", None, "https://api.github.com", "k", 60, app_id=1)


def _comment(
    body: str, *, app: dict[str, Any] | None = RAILYARD, at: str = "2026-12-01T10:00:00Z"
) -> dict[str, Any]:
    return {"id": 900, "body": body, "performed_via_github_app": app, "updated_at": at}


def _status(status: dict[str, Any], visible: str = "status") -> str:
    return f"{visible}\n\n{status_line(status)}\n\n{STATUS_END}"


def _refusal(operation_id: str, quoted: str = "/claim") -> str:
    line = answer_line(operation_id, "wrong_state", 5)
    return f"@cody: `{quoted}`\n\nRefused: taken.\n\nTry another.\n\n{line}\n\n{marker('reply:900')}"


def test_the_status_comment_showing_our_claim_at_a_newer_revision_is_applied() -> None:
    """Claimant is the poster's account, work claimed, revision past the one read before: applied."""
    result = outcome_in(_options(), POSTED, [_comment(_status(CLAIMED))], 4)
    assert result is not None and result.exit == EXIT_APPLIED and result.revision == 5


def test_a_status_comment_from_before_the_claim_is_not_its_outcome() -> None:
    """The same claimant at the revision read before the post (an older claim): still waiting."""
    assert outcome_in(_options(), POSTED, [_comment(_status(CLAIMED))], 5) is None


def test_railyards_reply_naming_our_comment_is_the_refusal() -> None:
    """The app's reply whose answer line names comment 501: refused, with its code and words."""
    result = outcome_in(_options(), POSTED, [_comment(_refusal("501"))], 4)
    assert result is not None and result.exit == EXIT_REFUSED and result.code == "wrong_state"
    assert (result.message, result.hint) == ("Refused: taken.", "Try another.")


def test_a_reply_to_another_comment_is_not_our_outcome() -> None:
    """A refusal answering comment 502 says nothing about 501."""
    assert outcome_in(_options(), POSTED, [_comment(_refusal("502"))], 4) is None


def test_markers_a_person_typed_are_ignored() -> None:
    """A person's comment with a forged answer line or status line changes nothing we read."""
    forged = [_comment(_refusal("501"), app=None), _comment(_status(CLAIMED), app=None)]
    assert outcome_in(_options(), POSTED, forged, 4) is None
    assert latest_revision(_options(), forged) is None


def test_another_apps_comments_are_not_railyards_answers() -> None:
    """An app other than railyard's posts a perfect status comment and reply: neither counts."""
    forged = [_comment(_refusal("501"), app=OTHER_APP), _comment(_status(CLAIMED), app=OTHER_APP)]
    assert outcome_in(_options(), POSTED, forged, 4) is None
    assert latest_revision(_options(), forged) is None


def test_without_railyards_app_id_nothing_is_trusted() -> None:
    """Options without an app id read no comment as railyard's."""
    unknown_app = Options("claim", "acme/web", 12, "t", None, "https://api.github.com", "k", 60)
    assert outcome_in(unknown_app, POSTED, [_comment(_status(CLAIMED))], 4) is None


def test_a_marker_quoted_in_railyards_reply_is_not_its_answer_or_the_state() -> None:
    """railyard's reply to an outsider quoting a status line and an answer naming our comment:
    only the reply's own last line counts, and it answers the outsider's comment."""
    status = '<!-- railyard:status-json {"work":"claimed","revision":999,"claimant_id":77} -->'
    forged = f"{status} {answer_line('501', 'x', 1)}"
    reply = _comment(_refusal("700", quoted=forged))
    assert outcome_in(_options(), POSTED, [reply], 4) is None
    assert shown_status(_options(), [reply]) is None


def test_the_state_comes_only_from_the_status_comment() -> None:
    """A railyard comment whose last line is a status line but ends with another effect's
    marker (not the ticket's status comment) is not the state."""
    elsewhere = f"x\n\n{status_line(CLAIMED)}\n\n{marker('status:acme/web#13')}"
    assert shown_status(_options(), [_comment(elsewhere)]) is None
    assert shown_status(_options(), [_comment(_status(CLAIMED))]) == CLAIMED


def test_the_newest_status_comment_wins_not_the_last_listed() -> None:
    """Two status comments (an earlier one left by a retried write): the newest update counts."""
    old = _comment(_status({**CLAIMED, "revision": 9}), at="2026-12-01T09:00:00Z")
    new = _comment(_status(CLAIMED), at="2026-12-01T10:00:00Z")
    assert latest_revision(_options(), [new, old]) == 5


def test_a_delivery_shows_when_the_status_comment_names_our_comment_as_its_operation() -> None:
    """deliver: applied once the last delivery's operation id is the posted comment's id."""
    delivered = {**CLAIMED, "work": "delivered", "revision": 6, "delivery": {"operation_id": "501"}}
    other = {**delivered, "delivery": {"operation_id": "499"}}
    assert outcome_in(_options("deliver"), POSTED, [_comment(_status(other))], None) is None
    result = outcome_in(_options("deliver"), POSTED, [_comment(_status(delivered))], None)
    assert result is not None and result.exit == EXIT_APPLIED


def test_without_an_app_id_github_actions_railyard_job_earns_no_trust_and_nothing_is_posted() -> None:
    """A workflow job named `railyard` gives GitHub Actions (app 15368) a `railyard` check-run,
    and github-actions[bot] shows a claim by us: without an app id the claim is not sent and
    not reported applied, whatever GitHub holds."""
    actions, posted = 15368, []
    lookalike = _comment(_status({**CLAIMED, "revision": 99}), app={"id": actions, "slug": "github-actions"})

    def github(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/check-runs"):
            run = {"name": "railyard", "app": {"id": actions, "slug": "github-actions"}}
            return httpx.Response(200, json={"total_count": 1, "check_runs": [run]})
        if request.method == "POST":
            posted.append(request)
            return httpx.Response(201, json={**POSTED, "created_at": "2026-12-01T00:00:01Z"})
        return httpx.Response(200, json=[lookalike] if posted else [])

    options = Options(
        "claim", "acme/web", 12, "t", None, "https://api.github.com", "k", 5.0, poll_interval=0.0
    )
    with httpx.Client(transport=httpx.MockTransport(github)) as client:
        result = run_comment(options, client, sleep=lambda _: None)
    assert result.exit == EXIT_USAGE and "--app-id" in result.message and posted == []


def test_a_rate_limit_reset_that_is_not_ascii_digits_is_waited_out_not_a_crash() -> None:
    """`str.isdigit()` holds for `²`, which `int()` refuses: a reset header of it (latin-1, as
    httpx decodes it) raised ValueError after the comment was posted, a traceback and exit 1,
    the status that means "refused", though the command may have applied."""
    posted: list[httpx.Request] = []
    reads = []

    def github(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            posted.append(request)
            return httpx.Response(201, json={**POSTED, "created_at": "2026-12-01T00:00:01Z"})
        reads.append(request)
        if posted and len(reads) == 2:  # the first read after posting: over the limit
            headers = [(b"x-ratelimit-remaining", b"0"), (b"x-ratelimit-reset", b"\xb2")]
            return httpx.Response(403, headers=headers, json={"message": "API rate limit exceeded"})
        return httpx.Response(200, json=[_comment(_status(CLAIMED))] if posted else [])

    options = Options(
        "claim", "acme/web", 12, "t", None, "https://api.github.com", "k", 60.0, poll_interval=0.0, app_id=1
    )
    with httpx.Client(transport=httpx.MockTransport(github)) as client:
        result = run_comment(options, client, sleep=lambda _: None)
    assert result.exit == EXIT_APPLIED, result
