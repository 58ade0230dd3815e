"""A kept API answer replayed after the ticket moved to a new attempt is not "applied" again
(SPEC: "Answers that cannot be forged or jammed")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.views.api_text import earlier_attempt_answer
from handlers.api import replays_an_earlier_attempt
from handlers.ports import KeptAnswer
from policies.commands import Claim, Deliver, SendBack
from policies.rails import CheckObserved, PullRequestObserved, RailPolicy
from policies.states import WorkState
from tests.fakes import REVIEWER, RUNNER, START, Story

HEAD = "a1b2c3d4e5f6"


def _kept(applied: bool, attempt: int) -> KeptAnswer:
    body = {"applied": applied, "status": {"attempt": attempt, "work": "delivered"}}
    return KeptAnswer(7, "k", "d", 200 if applied else 409, body, datetime(2026, 12, 1, tzinfo=UTC))


def test_an_applied_answer_of_an_older_attempt_is_an_earlier_attempts_answer() -> None:
    """Delivered at attempt 1, sent back (attempt 2): replaying the delivery names attempt 1,
    answers 409 with the current status, and keeps the earlier answer beside it."""
    story = Story().walk_to(WorkState.OPEN)
    story.command(Claim(), RUNNER)
    story.command(Deliver(summary="s", commit="0badc0ffee11"), RUNNER)
    assert not replays_an_earlier_attempt(_kept(True, 1), story.ticket)
    story.command(SendBack(feedback="f"), REVIEWER)
    assert replays_an_earlier_attempt(_kept(True, 1), story.ticket)
    assert not replays_an_earlier_attempt(_kept(False, 1), story.ticket)  # a refusal stays as it was
    assert not replays_an_earlier_attempt(_kept(True, 2), story.ticket)
    status, body = earlier_attempt_answer(_kept(True, 1).body, story.ticket, datetime.now(UTC))
    assert status == 409 and body["applied"] is False and body["refusal"]["code"] == "earlier_attempt"
    assert body["status"]["attempt"] == 2 and body["earlier_answer"]["applied"] is True
    assert "attempt 1" in body["refusal"]["message"] and "now at attempt 2" in body["refusal"]["message"]


def test_an_earlier_attempts_answer_judges_blocked_by_under_the_repositorys_policy() -> None:
    """The current status in the 409 names what blocks under the repository's `checks.required`:
    `lint` failed on the open PR, but only `build` is required, so nothing is named."""
    story = Story().walk_to(WorkState.CLAIMED)
    url, later = "https://github.com/acme/app/pull/34", START + timedelta(minutes=30)
    story.observe(PullRequestObserved(34, url, True, True, False, HEAD, "agent/12", None, later))
    story.observe(CheckObserved(HEAD, "lint", "failure", 7, later))
    now, required = datetime.now(UTC), RailPolicy(required_checks=("build",))
    _, shown = earlier_attempt_answer(_kept(True, 1).body, story.ticket, now)
    assert [block["checks"] for block in shown["status"]["blocked_by"]] == [["lint"]]
    _, judged = earlier_attempt_answer(_kept(True, 1).body, story.ticket, now, required)
    assert judged["status"]["blocked_by"] == []
