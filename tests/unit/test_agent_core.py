"""The pure parts of `railyard agent`: command text, keys, answers to exit statuses, summaries."""

from __future__ import annotations

import argparse

import pytest

from app.cli import build_parser
from app.cli.agent import UsageError, resolve
from app.cli.agent_core import (
    EXIT_APPLIED,
    EXIT_REFUSED,
    EXIT_UNKNOWN,
    EXIT_USAGE,
    Options,
    backoff,
    claim_held,
    claim_shown,
    claim_text,
    default_key,
    deliver_text,
    from_api,
    outputs,
    reply_words,
    step_summary,
)
from policies.commands import Claim, Deliver
from policies.parser import parse_comment


def _no(code: str) -> dict[str, object]:
    return {"applied": False, "refusal": {"code": code, "message": "m", "hint": "h"}}


STATUS = {"ticket": "acme/web#12", "work": "claimed", "revision": 4, "attempt": 1, "claimant_id": 77}


def _args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["agent", *argv])


def test_the_claim_text_is_what_railyards_parser_reads_as_that_claim() -> None:
    """`claim_text` gives a /claim the parser reads with the same check-in, branch and revision."""
    parsed = parse_comment(claim_text(30, "agent/12-fix", 3))
    assert (
        parsed.command == Claim(check_in_minutes=30, branch="agent/12-fix") and parsed.expected_revision == 3
    )


def test_a_summary_line_that_begins_with_a_slash_stays_in_the_summary() -> None:
    """A summary whose lines look like commands (or `key=value`) is delivered whole, never run."""
    text = deliver_text("commit=abc is fixed\n/accept please\n  /reopen", "b", "a" * 40, ["https://x/1"], 2)
    parsed = parse_comment(text)
    assert isinstance(parsed.command, Deliver) and parsed.ignored == ()
    assert parsed.command.summary == "commit=abc is fixed\n\\/accept please\n  \\/reopen"
    assert parsed.command.artifacts == ("https://x/1",) and parsed.expected_revision == 2


def test_the_default_key_names_the_run_attempt_action_issue_and_commit() -> None:
    """A re-run (a new run attempt, e.g. after a send-back) or a new commit gets a new key, so it
    is a new command rather than a replay of the first delivery; another action or issue too."""
    env = {"GITHUB_RUN_ID": "99", "GITHUB_RUN_ATTEMPT": "1", "GITHUB_REPOSITORY": "acme/web"}
    first = default_key(env, "deliver", 12, "c" * 40)
    assert first == default_key(env, "deliver", 12, "c" * 40)  # a retry within the attempt replays
    others = {
        default_key({**env, "GITHUB_RUN_ATTEMPT": "2"}, "deliver", 12, "c" * 40),
        default_key(env, "deliver", 12, "d" * 40),
        default_key(env, "deliver", 13, "c" * 40),
        default_key(env, "claim", 12, None),
    }
    assert first not in others and len(others) == 4 and default_key({}, "claim", 12, None) is None
    # A re-run's claim replays the run's claim (railyard then answers whether it is still held).
    assert default_key(env, "claim", 12, None) == default_key(
        {**env, "GITHUB_RUN_ATTEMPT": "2"}, "claim", 12, None
    )


def test_a_replayed_claim_of_an_earlier_attempt_still_held_by_its_account_is_applied() -> None:
    """After a send-back the ticket is claimed again by the same account: the claim step of a
    re-run exits 0 with the current attempt; claimed by someone else, it stays refused."""
    earlier = {"applied": True, "status": {**STATUS, "attempt": 1}}
    now = {**STATUS, "attempt": 2, "revision": 7}
    refusal = {"code": "earlier_attempt", "message": "m", "hint": "h"}
    held = claim_held(
        from_api(409, {"applied": False, "refusal": refusal, "status": now, "earlier_answer": earlier})
    )
    assert held.exit == EXIT_APPLIED and held.attempt == 2 and held.revision == 7
    taken = {**now, "claimant_id": 78}
    body = {"applied": False, "refusal": refusal, "status": taken, "earlier_answer": earlier}
    assert claim_held(from_api(409, body)).exit == EXIT_REFUSED


@pytest.mark.parametrize(
    ("status", "body", "exit_status", "code"),
    [
        (200, {"applied": True, "status": STATUS, "events": []}, EXIT_APPLIED, None),
        (409, _no("stale_revision"), EXIT_REFUSED, "stale_revision"),
        (403, _no("not_allowed"), EXIT_REFUSED, "not_allowed"),
        (429, _no("over_budget"), EXIT_REFUSED, "over_budget"),
        (422, {"error": {"code": "key_reused", "message": "m"}}, EXIT_USAGE, "key_reused"),
        (401, {"error": {"code": "bad_token", "message": "m"}}, EXIT_USAGE, "bad_token"),
        (404, None, EXIT_USAGE, "not_found"),
        (418, "teapot", EXIT_UNKNOWN, "http_418"),
    ],
)  # fmt: skip
def test_each_api_answer_maps_to_its_exit_status(
    status: int, body: object, exit_status: int, code: str | None
) -> None:
    """Applied exits 0, a refusal 1, a request railyard cannot take 2, anything unforeseen 3."""
    result = from_api(status, body)
    assert (result.exit, result.code) == (exit_status, code)


def test_a_claim_shows_only_for_its_account_at_a_newer_revision() -> None:
    """The status comment shows our claim when the claimant is our account and the revision moved."""
    assert claim_shown(STATUS, 77, 3)
    assert not claim_shown(STATUS, 78, 3) and not claim_shown(STATUS, 77, 4)


def test_a_refusal_replys_words_drop_the_quote_and_the_hidden_line() -> None:
    """The message is the reply without its `@author: line` quote and its hidden answer line."""
    reply = '@cody: `/claim`\n\nRefused: no.\n\nAsk a maintainer.\n\n<!-- railyard:answer {"code":"x"} -->'
    assert reply_words(reply) == "Refused: no.\n\nAsk a maintainer."


def test_backoff_honours_retry_after_and_doubles_up_to_a_ceiling() -> None:
    """Retry-After wins; otherwise 1, 2, 4 ... seconds, never more than 30."""
    assert backoff(0, "7") == 7.0 and backoff(0, None) == 1.0 and backoff(2, None) == 4.0
    assert backoff(10, None) == 30.0 and backoff(3, "soon") == 8.0


def test_a_retry_after_of_digits_that_are_not_ascii_is_no_retry_after() -> None:
    """`"²".isdigit()` is true but `float("²")` raises: a Retry-After of it (latin-1 from the
    wire) crashed the wait with a traceback (exit 1, "refused") instead of backing off."""
    assert backoff(0, "²") == 1.0 and backoff(2, "1²") == 4.0


def test_the_step_summary_and_outputs_state_the_outcome() -> None:
    """The summary names the verdict, the command and the code; the outputs the revision and attempt."""
    options = Options("claim", "acme/web", 12, "t", None, "https://api.github.com", "k", 120)
    result = from_api(
        409, {"applied": False, "refusal": {"code": "wrong_state", "message": "Taken."}, "status": STATUS}
    )
    text = step_summary(options, result)
    assert "### railyard claim acme/web#12: refused" in text and "- code: `wrong_state`" in text
    assert "> Taken." in text and "- command: `/claim`" in text
    assert outputs(result) == "revision=4\nattempt=1\napplied=false\n"


def test_options_fall_back_to_the_environment_an_actions_step_has() -> None:
    """--repo, --token, --url, --commit fall back to the variables Actions sets."""
    env = {
        "GITHUB_REPOSITORY": "acme/web",
        "RAILYARD_TOKEN": "tok",
        "GITHUB_TOKEN": "no",
        "GITHUB_SHA": "c" * 40,
    }
    options = resolve(
        _args("deliver", "--issue", "12", "--summary", "Done."), {**env, "RAILYARD_URL": "https://r"}
    )
    assert (options.repo, options.token, options.url, options.commit) == (
        "acme/web",
        "tok",
        "https://r",
        "c" * 40,
    )
    by_comment = resolve(_args("claim", "--issue", "12"), {**env, "RAILYARD_APP_ID": "7"})
    assert (by_comment.url, by_comment.app_id) == (None, 7)  # no URL: by comment


def test_by_comment_without_railyards_app_id_the_step_stops_saying_where_to_find_it() -> None:
    """No --app-id, RAILYARD_APP_ID or app-id input by comment: a usage error naming them and the
    app's settings page; by API the id is not needed."""
    env = {"GITHUB_REPOSITORY": "acme/web", "RAILYARD_TOKEN": "tok", "GITHUB_SHA": "c" * 40}
    with pytest.raises(UsageError) as refused:
        resolve(_args("claim", "--issue", "12"), env)
    for words in ("--app-id", "RAILYARD_APP_ID", "app-id input", "settings page", "nothing was posted"):
        assert words in str(refused.value)
    assert resolve(_args("claim", "--issue", "12"), {**env, "RAILYARD_URL": "https://r"}).app_id is None


@pytest.mark.parametrize(
    "argv",
    [
        ("claim", "--issue", "12", "--repo", "not a repo"),
        ("claim", "--issue", "0"),
        ("claim", "--issue", "12", "--idempotency-key", "k" * 256),
        ("claim", "--issue", "12", "--url", "ftp://r"),
        ("claim", "--issue", "12", "--url", "http://railyard.example"),  # the token in clear
        ("claim", "--issue", "12", "--url", "https://user:pw@railyard.example"),
        ("deliver", "--issue", "12", "--branch", "b"),
        ("deliver", "--issue", "12", "--summary", "Done.", "--artifact", "two words"),
    ],
)
def test_bad_inputs_are_usage_errors(argv: tuple[str, ...]) -> None:
    """A bad repository, issue, key or URL (not https off this machine, or with credentials), a
    summary-less delivery, a bad artifact: refused unsent."""
    with pytest.raises(UsageError):
        env = {"GITHUB_REPOSITORY": "acme/web", "RAILYARD_TOKEN": "tok", "RAILYARD_APP_ID": "1"}
        resolve(_args(*argv), env)
