"""`railyard agent` by comment, the reading part: which comments show the outcome of the one
the agent posted. Only an app's comments count; a person can type any marker."""

from __future__ import annotations

from typing import Any

from app.cli.agent_comment import latest_revision, outcome_in
from app.cli.agent_core import EXIT_APPLIED, EXIT_REFUSED, Options
from app.views.status_json import answer_line, status_line

APP = {"id": 1, "slug": "railyard"}
POSTED = {"id": 501, "user": {"id": 77, "login": "cody"}}
CLAIMED = {"work": "claimed", "revision": 5, "attempt": 1, "claimant_id": 77, "delivery": None}


def _options(action: str = "claim") -> Options:
    return Options(action, "acme/web", 12, "t", None, "https://api.github.com", "k", 60)


def _comment(body: str, *, app: bool = True) -> dict[str, Any]:
    return {"id": 900, "body": body, "performed_via_github_app": APP if app else None}


def _refusal(operation_id: str) -> str:
    return (
        f"@cody: `/claim`\n\nRefused: taken.\n\nTry another.\n\n{answer_line(operation_id, 'wrong_state', 5)}"
    )


def test_the_status_comment_showing_our_claim_at_a_newer_revision_is_applied() -> None:
    """Claimant is the poster's account, work claimed, revision past the one read before: applied."""
    result = outcome_in(_options(), POSTED, [_comment("status\n\n" + status_line(CLAIMED))], 4)
    assert result is not None and result.exit == EXIT_APPLIED and result.revision == 5


def test_a_status_comment_from_before_the_claim_is_not_its_outcome() -> None:
    """The same claimant at the revision read before the post (an older claim): still waiting."""
    assert outcome_in(_options(), POSTED, [_comment(status_line(CLAIMED))], 5) is None


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
    forged = [_comment(_refusal("501"), app=False), _comment(status_line(CLAIMED), app=False)]
    assert outcome_in(_options(), POSTED, forged, 4) is None
    assert latest_revision(forged) is None


def test_a_delivery_shows_when_the_status_comment_names_our_comment_as_its_operation() -> None:
    """deliver: applied once the last delivery's operation id is the posted comment's id."""
    delivered = {**CLAIMED, "work": "delivered", "revision": 6, "delivery": {"operation_id": "501"}}
    other = {**delivered, "delivery": {"operation_id": "499"}}
    assert outcome_in(_options("deliver"), POSTED, [_comment(status_line(other))], None) is None
    result = outcome_in(_options("deliver"), POSTED, [_comment(status_line(delivered))], None)
    assert result is not None and result.exit == EXIT_APPLIED
