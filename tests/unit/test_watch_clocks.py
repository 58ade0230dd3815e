"""The watchdog's other clocks, pure: an attempt's absolute deadline, a delivery's wait for review,
the comments that are no sign of life, and what the status object and `attention` make of them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.views.render import StatusView, render_status_comment
from app.views.status_json import status_object
from handlers.signs import claimant_comment, only_informational
from policies.attention import OverdueRecord, RecordFacts, attention
from policies.commands import Accept
from policies.events import NOTICE_EVENT_TYPES, EventType
from policies.model import Ticket
from policies.notices import (
    NoticeContext,
    OverdueObserved,
    ReviewOverdueObserved,
    decide_notice,
    review_overdue_operation_id,
)
from policies.parser import parse_comment
from policies.refusals import Refusal
from policies.states import WorkState
from policies.watchdog import (
    DEFAULT_REVIEW_WAIT_HOURS,
    MAX_ATTEMPT_HOURS,
    Clocks,
    ReviewWait,
    Watch,
    current_silence,
    deadline,
    overdue,
    past_deadline,
    review_overdue,
    review_wait_hours,
)
from tests.fakes import REVIEWER, RUNNER, Story

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    """T0 plus `minutes`."""
    return T0 + timedelta(minutes=minutes)


def hourly(hours: int, last: int) -> Watch:
    """An attempt opened at T0 with a 60-minute silence limit and a deadline of `hours`, whose
    claimant has commented every hour up to hour `last` (the latest is what the store keeps)."""
    return Watch(1, "cody", T0, at(60 * last), 60, max_attempt_hours=hours)


# -- the deadline ------------------------------------------------------------------------


def test_an_attempt_past_its_deadline_is_overdue_whatever_hourly_comments_it_shows() -> None:
    """Commenting every hour keeps the silence short, but past `max_attempt_hours` from the claim the
    attempt is overdue by its deadline."""
    watch = hourly(hours=24, last=25)
    now = at(60 * 25 + 10)

    assert overdue(watch, now) is None  # the silence is ten minutes old
    found = past_deadline(watch, now)
    assert found is not None and found.due_at == at(60 * 24)
    assert found.overdue_by(now) == timedelta(minutes=70)
    assert past_deadline(watch, at(60 * 24)) is None  # at the deadline itself: not yet past


def test_without_max_attempt_hours_an_attempt_has_no_deadline() -> None:
    """`claims.max_attempt_hours: null` (the default): only the silence is watched."""
    watch = Watch(1, "cody", T0, None, 60)
    assert deadline(watch) is None and past_deadline(watch, at(10**6)) is None


def test_a_stored_deadline_past_a_year_is_applied_as_a_year_and_never_overflows() -> None:
    """An absurd stored value (written before the bound, or by hand) is bounded; near year 9999 the
    deadline is the end of time rather than an error."""
    assert deadline(Watch(1, "cody", T0, None, 60, 10**12)) is not None
    found = deadline(Watch(1, "cody", T0, None, 60, 10**12))
    assert found is not None and found.due_at == T0 + timedelta(hours=MAX_ATTEMPT_HOURS)
    late = datetime(9999, 12, 31, tzinfo=UTC)
    end = deadline(Watch(1, "cody", late, None, 60, 10**12))
    assert end is not None and end.due_at == datetime.max.replace(tzinfo=UTC)


@given(
    signs=st.lists(st.integers(min_value=0, max_value=60 * 24 * 60), max_size=12),
    limit=st.integers(min_value=1, max_value=60 * 24 * 7),
    hours=st.integers(min_value=1, max_value=MAX_ATTEMPT_HOURS),
)
def test_signs_of_life_only_move_the_due_time_forward_and_never_move_the_deadline(
    signs: list[int], limit: int, hours: int
) -> None:
    """Whatever signs of life arrive (the store keeps the latest), the silence's due time never goes
    back and the attempt's deadline stays where the claim put it."""
    watch = Watch(1, "cody", T0, None, limit, hours)
    first = deadline(watch)
    assert first is not None
    due = current_silence(watch).deadline
    latest: datetime | None = None
    for minute in signs:
        heard = at(minute)
        latest = heard if latest is None or heard > latest else latest
        watch = Watch(1, "cody", T0, latest, limit, hours)
        moved = current_silence(watch).deadline
        assert moved >= due
        due = moved
        assert deadline(watch) == first


# -- comments that are no sign of life --------------------------------------------------------


@pytest.mark.parametrize("body", ["/status", "/help", "  /status #12\n\n/help\n", "/STATUS"])
def test_a_comment_that_only_asks_for_status_or_help_is_no_sign_of_life(body: str) -> None:
    """`/status` and `/help` alone (any case, with a number, several) are asking, not working."""
    ticket = Story().walk_to(WorkState.CLAIMED).ticket
    assert only_informational(body, parse_comment(body))
    heard = claimant_comment(
        ticket, RUNNER.login, RUNNER.id or 0, T0, 1, only_informational(body, parse_comment(body))
    )
    assert heard is None


@pytest.mark.parametrize(
    "body", ["/status\nThe retry loop is next.", "Still on it.", "/deliver\nDone", "/stauts"]
)
def test_any_other_comment_by_the_claimant_is_a_sign_of_life(body: str) -> None:
    """Words beside `/status`, plain words, another command, a mistyped one: each still counts."""
    ticket = Story().walk_to(WorkState.CLAIMED).ticket
    informational = only_informational(body, parse_comment(body))
    assert not informational
    assert claimant_comment(ticket, RUNNER.login, RUNNER.id or 0, T0, 1, informational) is not None


# -- the reviewer's clock -----------------------------------------------------------------------


def test_a_delivery_waiting_past_max_wait_hours_is_review_overdue() -> None:
    """The wait counts from the delivery; at the limit it is not yet overdue, a moment later it is."""
    wait = ReviewWait(1, "cody", T0, 72, "op-deliver")
    assert wait.due_at == T0 + timedelta(hours=72)
    assert not review_overdue(wait, wait.due_at)
    assert review_overdue(wait, wait.due_at + timedelta(seconds=1))


def test_the_stored_review_wait_is_the_default_when_unknown_and_off_when_null() -> None:
    """Nothing stored: 72 hours; `null` in the file (stored as 0): not watched; a huge value: a year."""
    assert review_wait_hours(None) == DEFAULT_REVIEW_WAIT_HOURS == 72
    assert review_wait_hours(0) is None
    assert review_wait_hours(10**12) == 8760


def delivered() -> Story:
    """#12 delivered by the runner."""
    return Story().walk_to(WorkState.DELIVERED)


def review_notice(story: Story) -> ReviewOverdueObserved:
    """The watchdog's notice about the story's current delivery."""
    delivery = story.ticket.last_delivery
    assert delivery is not None
    wait = ReviewWait(delivery.attempt, delivery.runner, delivery.at, 2, delivery.operation_id)
    return ReviewOverdueObserved(wait.attempt, wait.runner, wait.delivered_at, 2, wait.delivery, wait.due_at)


def test_review_overdue_is_a_notice_recorded_while_the_delivery_still_waits() -> None:
    """`review_overdue` names the attempt, the runner, the delivery and the limit; once a decision is
    made the same notice records nothing."""
    story = delivered()
    notice = review_notice(story)
    ctx = NoticeContext("railyard", "review-1", at(500), "v1")
    decision = decide_notice(story.ticket, notice, ctx)
    assert not isinstance(decision, Refusal)
    [event] = decision
    assert event.type is EventType.REVIEW_OVERDUE and event.type in NOTICE_EVENT_TYPES
    assert {k: event.data[k] for k in ("attempt", "runner", "max_wait_hours", "delivery")} == {
        "attempt": 1,
        "runner": RUNNER.login,
        "max_wait_hours": 2,
        "delivery": notice.delivery,
    }
    accepted = story.command(Accept(), REVIEWER).ticket
    assert decide_notice(accepted, notice, ctx) == ()


def test_review_overdue_gets_its_attention_code_and_a_line_on_the_status_comment() -> None:
    """The recorded notice of the current delivery: `attention` says `review_overdue` and the status
    comment says the review is overdue; before it is recorded, neither does."""
    story = delivered()
    key = story.ticket.key
    delivery = story.ticket.last_delivery
    assert delivery is not None
    facts = RecordFacts(
        review_overdue=review_overdue_operation_id(key.repository, key.number, delivery.operation_id)
    )
    assert "review_overdue" not in attention(story.ticket, RecordFacts(), at(0))
    assert "Review overdue" not in render_status_comment(StatusView(story.ticket, tuple(story.events)))

    story.notice(review_notice(story))

    assert "review_overdue" in attention(story.ticket, facts, at(0))
    assert "**Review overdue.**" in render_status_comment(StatusView(story.ticket, tuple(story.events)))


def test_a_deadline_overdue_says_so_on_the_status_comment_even_after_a_later_silence() -> None:
    """`claim_overdue` with reason `deadline` is shown as a passed deadline, and a later silence
    notice of the same attempt does not hide it."""
    story = Story().walk_to(WorkState.CLAIMED)
    opened = story.events[-1].at
    story.notice(OverdueObserved(1, RUNNER.login, opened, 60, "deadline", opened + timedelta(hours=3), 3))
    story.notice(OverdueObserved(1, RUNNER.login, opened + timedelta(hours=4), 60))
    text = render_status_comment(StatusView(story.ticket, tuple(story.events)))
    assert "passed its deadline" in text and "3 hours from the claim" in text


# -- readable deadlines ----------------------------------------------------------------------


def test_the_status_object_says_when_a_claim_is_due_and_when_a_delivery_is() -> None:
    """Claimed: `watch` with the silence's start and end, the deadline and the limit; delivered:
    `review_due_at`; without the watchdog's facts both are None."""
    claimed: Ticket = Story().walk_to(WorkState.CLAIMED).ticket
    watch = Watch(claimed.attempt, RUNNER.login, T0, at(30), 60, max_attempt_hours=8)
    found = status_object(claimed, clocks=Clocks(watch=watch))
    assert found["watch"] == {
        "silent_since": at(30).isoformat(),
        "due_at": at(90).isoformat(),
        "deadline_at": at(8 * 60).isoformat(),
        "limit_minutes": 60,
    }
    assert found["review_due_at"] is None
    assert status_object(claimed)["watch"] is None

    story = delivered()
    delivery = story.ticket.last_delivery
    assert delivery is not None
    wait = ReviewWait(1, RUNNER.login, delivery.at, 72, delivery.operation_id)
    shown = status_object(story.ticket, clocks=Clocks(review=wait))
    assert shown["review_due_at"] == (delivery.at + timedelta(hours=72)).isoformat()
    assert shown["watch"] is None


def test_a_passed_deadline_keeps_its_attention_code_after_a_sign_of_life() -> None:
    """`claim_overdue` with reason `deadline`: a comment afterwards ends a silence, never a deadline."""
    story = Story().walk_to(WorkState.CLAIMED)
    since = at(0)
    record = OverdueRecord(story.ticket.attempt, since, 60, at(200), reason="deadline")
    facts = RecordFacts(record, last_sign_of_life=at(300))
    assert "claim_overdue" in attention(story.ticket, facts, at(400))
    silence = RecordFacts(OverdueRecord(story.ticket.attempt, since, 60, at(200)), last_sign_of_life=at(300))
    assert "claim_overdue" not in attention(story.ticket, silence, at(400))
