"""The watchdog's deadline and reviewer's clock through the handlers: the configuration read at the
claim and the delivery is stored for the attempt, `/status` comments leave the silence running, and
`watch_claims` records `claim_overdue` (reason `deadline`) and `review_overdue` once each."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import update

from app.bootstrap import Shell
from app.runtime.watchdog import check_claims, watch_claims
from app.store.listing import Listing
from app.store.signs import read_clocks, signs_of_life
from app.views.status_json import status_object
from github_standin import StandinState
from policies.events import EventType
from policies.model import TicketKey
from tests.integration.test_watchdog import CLAIMANT, KEY, handlers, minutes, say, stored_sign

__all__ = ["handlers"]  # the fixture, shared with the signs-of-life tests

CLOCKS = """
roles:
  runner: ["coder-bot[bot]"]
  requester: ["rachel"]
  reviewer: ["rita"]
claims:
  max_silence_minutes: 60
  max_attempt_hours: 3
reviews:
  max_wait_hours: 2
"""


def configure(state: StandinState, text: str = CLOCKS) -> None:
    """acme/web's `.github/railyard.yml` is `text` (before anything reads it)."""
    state.repositories["acme/web"].files[".github/railyard.yml"] = text


def recorded(services: Shell, kind: EventType, key: TicketKey = KEY) -> list[dict[str, Any]]:
    """The data of every `kind` event on the ticket."""
    return [dict(r.event.data) for r in services.tickets.history(key) if r.event.type is kind]


async def test_an_attempt_past_max_attempt_hours_with_hourly_comments_is_overdue_by_its_deadline(
    handlers: tuple[Shell, StandinState],
) -> None:
    """The claimant comments every 50 minutes, so the silence never runs out; three hours after the
    claim the attempt is `claim_overdue` with reason `deadline`, recorded once however often it is checked."""
    services, state = handlers
    configure(state)
    await say(services, "rachel", "/publish", minutes(0))
    await say(services, CLAIMANT, "/claim", minutes(1))
    assert stored_sign(services).max_attempt_hours == 3
    for minute in range(50, 230, 50):
        await say(services, CLAIMANT, f"Progress at minute {minute}.", minutes(minute))

    before = watch_claims(services.database, services.tickets, minutes(180))
    assert before.due == [] and recorded(services, EventType.CLAIM_OVERDUE) == []
    late = watch_claims(services.database, services.tickets, minutes(215))
    [due] = late.due
    assert (due.kind, due.ticket, due.recorded) == ("deadline", KEY, True)
    assert check_claims(services.database, services.tickets, minutes(215)) == []  # the silence is fine
    again = watch_claims(services.database, services.tickets, minutes(225))
    assert [(d.kind, d.recorded) for d in again.due] == [("deadline", False)]
    [event] = recorded(services, EventType.CLAIM_OVERDUE)
    assert (event["reason"], event["max_attempt_hours"], event["attempt"]) == ("deadline", 3, 1)
    assert event["deadline_at"] == (minutes(1) + timedelta(hours=3)).isoformat()
    assert services.tickets.load(KEY).work.value == "claimed"


async def test_status_and_help_comments_do_not_reset_the_silence(
    handlers: tuple[Shell, StandinState],
) -> None:
    """`/status` and `/help` by the claimant leave the silence running from the claim; a comment with
    anything else in it starts a new one."""
    services, state = handlers
    configure(state)
    await say(services, "rachel", "/publish", minutes(0))
    await say(services, CLAIMANT, "/claim", minutes(1))
    await say(services, CLAIMANT, "/status", minutes(20))
    await say(services, CLAIMANT, "/help", minutes(40))
    await say(services, CLAIMANT, "/status #12", minutes(55))
    assert (stored_sign(services).kind, stored_sign(services).at) == ("claim", minutes(1))

    [silent] = check_claims(services.database, services.tickets, minutes(62))
    assert silent.silence.silent_since == minutes(1)

    await say(services, CLAIMANT, "/status\nThe retry loop is next.", minutes(70))
    assert stored_sign(services).at == minutes(70)


async def test_a_delivery_waiting_past_max_wait_hours_is_review_overdue_once_and_flagged(
    handlers: tuple[Shell, StandinState],
) -> None:
    """Delivered and no decision for more than `reviews.max_wait_hours`: one `review_overdue`, the
    attention code, `review_due_at` in the status object; the acceptance ends it."""
    services, state = handlers
    configure(state)
    await say(services, "rachel", "/publish", minutes(0))
    await say(services, CLAIMANT, "/claim", minutes(1))
    await say(services, CLAIMANT, "/deliver\nResumable now.", minutes(10), number=34)
    ticket = services.tickets.load(KEY)
    due = minutes(10) + timedelta(hours=2)
    assert (
        status_object(ticket, clocks=read_clocks(services.database, ticket))["review_due_at"]
        == due.isoformat()
    )

    early = watch_claims(services.database, services.tickets, due)
    assert [(c.kind, c.overdue) for c in early.clocks] == [("review", False)]
    late = watch_claims(services.database, services.tickets, due + timedelta(minutes=1))
    assert [(c.kind, c.overdue, c.recorded) for c in late.clocks] == [("review", True, True)]
    watch_claims(services.database, services.tickets, due + timedelta(hours=5))
    [event] = recorded(services, EventType.REVIEW_OVERDUE)
    assert (event["attempt"], event["runner"], event["max_wait_hours"]) == (1, CLAIMANT, 2)
    [listed] = Listing(services.database).page().items
    assert listed.facts.review_overdue is not None
    from policies.attention import attention

    assert "review_overdue" in attention(listed.ticket, listed.facts, due + timedelta(hours=5))

    await say(services, "rita", "/accept", due + timedelta(hours=6))
    assert watch_claims(services.database, services.tickets, due + timedelta(hours=50)).clocks == []


async def test_reviews_max_wait_hours_null_turns_the_reviewers_clock_off(
    handlers: tuple[Shell, StandinState],
) -> None:
    """`reviews.max_wait_hours: null`: a delivery may wait for ever, nothing is watched or recorded."""
    services, state = handlers
    configure(state, CLOCKS.replace("max_wait_hours: 2", "max_wait_hours: null"))
    await say(services, "rachel", "/publish", minutes(0))
    await say(services, CLAIMANT, "/claim", minutes(1))
    await say(services, CLAIMANT, "/deliver\nResumable now.", minutes(10), number=34)
    assert watch_claims(services.database, services.tickets, minutes(10**5)).clocks == []
    assert recorded(services, EventType.REVIEW_OVERDUE) == []


@pytest.mark.parametrize("column", ["max_attempt_hours", "max_review_wait_hours"])
async def test_an_absurd_stored_limit_never_stops_the_watchdog(
    handlers: tuple[Shell, StandinState], column: str
) -> None:
    """A deadline or review wait of 10^9 hours written into the database by hand is read as a year:
    nothing raises, and the watchdog still judges the ticket."""
    services, state = handlers
    configure(state)
    await say(services, "rachel", "/publish", minutes(0))
    await say(services, CLAIMANT, "/claim", minutes(1))
    if column == "max_review_wait_hours":
        await say(services, CLAIMANT, "/deliver\nResumable now.", minutes(10), number=34)
    with services.database.write() as connection:
        connection.execute(update(signs_of_life).values({column: 10**9}))
    found = watch_claims(services.database, services.tickets, minutes(60 * 24 * 400))
    assert found.failed == []
    assert {c.kind for c in found.due} >= {"review" if column == "max_review_wait_hours" else "deadline"}
