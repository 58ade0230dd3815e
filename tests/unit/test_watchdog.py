"""The claim watchdog's pure core: silence periods, limits, branch patterns, and the notices
it records, which never move a rail."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies.commands import MAX_CHECK_IN_MINUTES, Claim, Context, Deliver, Publish, SendBack
from policies.engine import apply, apply_all, decide
from policies.events import NOTICE_EVENT_TYPES, Event, EventType
from policies.model import Actor, Ticket, TicketKey
from policies.notices import (
    IssueStateObserved,
    NoticeContext,
    OverdueObserved,
    decide_notice,
    overdue_operation_id,
)
from policies.refusals import Refusal, RefusalCode
from policies.states import Role, WorkState
from policies.watchdog import (
    DEFAULT_MAX_SILENCE_MINUTES,
    MAX_SILENCE_MINUTES,
    Silence,
    Watch,
    current_silence,
    overdue,
    silence_limit,
    ticket_number_from_branch,
)

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
KEY = TicketKey("acme/web", 12)
CODY = Actor("cody", frozenset({Role.RUNNER}))
RITA = Actor("rita", frozenset({Role.REVIEWER}))
OLIVIA = Actor("olivia", frozenset({Role.REQUESTER}))

minutes = st.integers(min_value=0, max_value=60 * 24 * 30)
limits = st.integers(min_value=1, max_value=60 * 24 * 7)


def watch(limit: int, sign: int | None = None, attempt: int = 1) -> Watch:
    """Attempt `attempt` opened at T0; a sign of life `sign` minutes later (or none)."""
    heard = T0 + timedelta(minutes=sign) if sign is not None else None
    return Watch(attempt, "cody", T0, heard, limit)


def at(offset: float) -> datetime:
    """T0 plus `offset` minutes."""
    return T0 + timedelta(minutes=offset)


# -- the silence check -------------------------------------------------------------------


@given(limit=limits, sign=st.none() | minutes, elapsed=minutes)
def test_an_attempt_is_never_overdue_before_or_at_its_limit(
    limit: int, sign: int | None, elapsed: int
) -> None:
    """Until the silence has lasted longer than the limit, the watchdog says nothing."""
    now = at((sign or 0) + min(elapsed, limit))
    assert overdue(watch(limit, sign), now) is None


@given(limit=limits, sign=st.none() | minutes, past=st.integers(min_value=1, max_value=10_000))
def test_an_attempt_silent_past_its_limit_is_overdue_by_how_far_past(
    limit: int, sign: int | None, past: int
) -> None:
    """One second past the limit is overdue, and the report says by how much."""
    silent_since = sign or 0
    now = at(silent_since + limit) + timedelta(seconds=past)
    period = overdue(watch(limit, sign), now)
    assert period is not None
    assert period.silent_since == at(silent_since)
    assert period.overdue_by(now) == timedelta(seconds=past)


@settings(max_examples=200)
@given(
    limit=limits, sign=st.none() | minutes, looks=st.lists(st.integers(1, 100_000), min_size=2, max_size=8)
)
def test_every_look_during_one_silence_finds_the_same_period(
    limit: int, sign: int | None, looks: list[int]
) -> None:
    """However often the watchdog looks, one silence is one period: the same operation id."""
    base = (sign or 0) + limit
    periods = {overdue(watch(limit, sign), at(base) + timedelta(seconds=s)) for s in looks}
    assert len(periods) == 1
    [period] = periods
    assert period is not None
    ids = {overdue_operation_id("acme/web", 12, 1, p.silent_since) for p in periods if p}
    assert len(ids) == 1


@given(limit=limits, first=minutes, gap=st.integers(min_value=1, max_value=10_000), later=minutes)
def test_a_sign_of_life_starts_a_new_period_and_resets_the_clock(
    limit: int, first: int, gap: int, later: int
) -> None:
    """After a new sign of life, the attempt is within its limit again, in a different period."""
    old = current_silence(watch(limit, first))
    renewed = watch(limit, first + gap)
    assert current_silence(renewed).silent_since > old.silent_since
    assert overdue(renewed, at(first + gap + min(later, limit))) is None
    found = overdue(renewed, at(first + gap + limit + 1))
    assert found is not None and found != old


@given(limit=limits, before=st.integers(min_value=1, max_value=10_000))
def test_a_sign_of_life_from_before_the_attempt_opened_does_not_shorten_it(limit: int, before: int) -> None:
    """A push made before the claim: the silence still starts at the claim."""
    assert current_silence(watch(limit, -before)).silent_since == T0
    assert overdue(watch(limit, -before), at(limit)) is None


def test_a_sign_of_life_later_than_the_time_checked_means_not_overdue() -> None:
    """Checking as of an earlier time than the latest sign finds no silence at all."""
    assert overdue(watch(30, sign=120), at(60)) is None


def test_the_limit_is_the_check_in_else_the_configured_maximum_else_240_minutes() -> None:
    """`/claim --check-in` wins over `claims.max_silence_minutes`, which wins over SPEC's default."""
    assert silence_limit(45, 600) == 45
    assert silence_limit(None, 600) == 600
    assert silence_limit(None, None) == DEFAULT_MAX_SILENCE_MINUTES == 240


@given(
    stored=st.integers(min_value=-(2**63), max_value=2**63),
    since=st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)),
    elapsed=st.integers(min_value=0, max_value=10**6),
)
def test_no_stored_limit_or_silence_start_makes_the_watchdog_raise(
    stored: int, since: datetime, elapsed: int
) -> None:
    """A limit stored before the bound (9,000,000,000 minutes), or any start, answers without an error."""
    limit = silence_limit(None, stored)
    period = Silence(1, "cody", since, limit)
    now = since + timedelta(
        seconds=min(elapsed, int((datetime.max.replace(tzinfo=UTC) - since).total_seconds()))
    )

    assert 1 <= limit <= MAX_SILENCE_MINUTES
    assert period.deadline >= since
    overdue(Watch(1, "cody", since, None, limit), now)  # answers without raising


def test_a_limit_stored_past_a_year_is_applied_as_a_year() -> None:
    """`max_silence_minutes: 9000000000` stored before the bound: overdue after a year, not never."""
    limit = silence_limit(None, 9_000_000_000)

    assert limit == MAX_SILENCE_MINUTES == 525_600
    assert overdue(watch(limit), at(MAX_SILENCE_MINUTES)) is None
    assert overdue(watch(limit), at(MAX_SILENCE_MINUTES + 1)) is not None


def test_the_operation_id_names_the_ticket_the_attempt_and_the_period_in_utc() -> None:
    """The same period written in another timezone is the same operation."""
    same = datetime(2026, 3, 2, 11, 0, tzinfo=timezone(timedelta(hours=2)))
    assert overdue_operation_id("Acme/Web", 12, 3, same) == overdue_operation_id("acme/web", 12, 3, T0)
    assert overdue_operation_id("acme/web", 12, 3, T0) == "overdue:acme/web#12:3:2026-03-02T09:00:00+00:00"


@pytest.mark.parametrize(
    ("pattern", "branch", "number"),
    [
        ("agent/{number}-*", "agent/12-fix-upload", 12),
        ("agent/{number}-*", "agent/12-", 12),
        ("agent/{number}-*", "agent/12", None),
        ("agent/{number}-*", "other/12-fix", None),
        ("agent/{number}-*", "agent/x12-fix", None),
        ("{number}", "7", 7),
        ("issue-{number}", "issue-7", 7),
        ("issue-{number}", "issue-7b", None),
        ("fix.{number}", "fixx7", None),  # a dot is a dot, not "any character"
        ("agent/*", "agent/12-fix", None),  # no {number}: names no ticket
        (None, "agent/12-fix", None),
        ("a/{number}/b/{number}", "a/3/b/3", 3),
        ("a/{number}/b/{number}", "a/3/b/4", None),
    ],
)
def test_branch_pattern_names_the_ticket_a_branch_belongs_to(
    pattern: str | None, branch: str, number: int | None
) -> None:
    """`{number}` is the ticket number, `*` any text, everything else literal."""
    assert ticket_number_from_branch(pattern, branch) == number


# -- notices: recorded through the one door, never moving a rail ----------------------------


def ctx(actor: Actor, minute: int) -> Context:
    """A command context at T0 + `minute`."""
    return Context(actor=actor, operation_id=f"op-{actor.login}-{minute}", at=at(minute), policy_version="v1")


def claimed_ticket() -> Ticket:
    """Published by olivia, claimed by cody (attempt 1)."""
    ticket = Ticket(KEY)
    for command, actor, minute in ((Publish("Resumable uploads"), OLIVIA, 0), (Claim(), CODY, 1)):
        decision = decide(ticket, command, ctx(actor, minute))
        assert not isinstance(decision, Refusal)
        ticket = apply_all(ticket, decision)
    return ticket


def notice_ctx(minute: int = 300) -> NoticeContext:
    """The watchdog's context."""
    return NoticeContext("railyard", f"notice-{minute}", at(minute), "v1")


OVERDUE = OverdueObserved(attempt=1, claimant="cody", silent_since=at(1), limit_minutes=240)


def test_an_overdue_claim_is_recorded_with_the_data_spec_names() -> None:
    """`claim_overdue` holds the attempt, the claimant, since when, the limit, and the reason (silence)."""
    decision = decide_notice(claimed_ticket(), OVERDUE, notice_ctx())
    assert not isinstance(decision, Refusal)
    [event] = decision
    assert (event.type, event.actor, event.role) == (EventType.CLAIM_OVERDUE, "railyard", None)
    assert dict(event.data) == {
        "attempt": 1,
        "claimant": "cody",
        "silent_since": "2026-03-02T09:01:00+00:00",
        "limit_minutes": 240,
        "reason": "silence",
    }


def test_a_period_recorded_once_is_not_recorded_again_under_another_operation_id() -> None:
    """The watchdog names a period's operation by the repository's name; after a rename the same
    silence (or the same deadline) comes under another id. The ticket's record of what it noted
    decides: the same period records nothing, a new silence of the same attempt does."""
    ticket = claimed_ticket()
    deadline = replace(OVERDUE, reason="deadline", deadline_at=at(200), max_attempt_hours=3)
    for notice in (OVERDUE, deadline):
        decision = decide_notice(ticket, notice, notice_ctx(300))
        assert not isinstance(decision, Refusal) and len(decision) == 1
        ticket = apply_all(ticket, decision)
        assert decide_notice(ticket, notice, NoticeContext("railyard", "renamed-id", at(301), "v1")) == ()
    later = replace(OVERDUE, silent_since=at(100))
    assert [e.type for e in decide_notice(ticket, later, notice_ctx(400))] == [EventType.CLAIM_OVERDUE]


@pytest.mark.parametrize(
    "change",
    [
        lambda t: replace(t, closed=True),
        lambda t: replace(t, attempt=2),
        lambda t: replace(t, claimant="ruth"),
        lambda t: replace(t, work=WorkState.DELIVERED),
        lambda t: replace(t, work=WorkState.OPEN, claimant=None),
    ],
    ids=["issue-closed", "newer-attempt", "other-claimant", "delivered", "released"],
)
def test_an_overdue_notice_records_nothing_once_the_silence_is_over(change: object) -> None:
    """Between looking and recording, a close, a delivery or a new attempt ends the watch."""
    ticket = change(claimed_ticket())  # type: ignore[operator]
    assert decide_notice(ticket, OVERDUE, notice_ctx()) == ()


def test_a_notice_about_an_issue_that_is_not_a_ticket_is_refused() -> None:
    """Closing an ordinary issue records nothing."""
    decision = decide_notice(Ticket(KEY), IssueStateObserved(closed=True), notice_ctx())
    assert isinstance(decision, Refusal) and decision.code is RefusalCode.NOT_A_TICKET


def test_closing_and_reopening_the_issue_flip_the_closed_flag_once_each() -> None:
    """The first close is recorded; a second close changes nothing; reopening clears it."""
    ticket = claimed_ticket()
    closed = decide_notice(ticket, IssueStateObserved(closed=True), notice_ctx())
    assert not isinstance(closed, Refusal) and [e.type for e in closed] == [EventType.ISSUE_CLOSED]
    ticket = apply_all(ticket, closed)
    assert ticket.closed
    assert decide_notice(ticket, IssueStateObserved(closed=True), notice_ctx()) == ()
    reopened = decide_notice(ticket, IssueStateObserved(closed=False), notice_ctx())
    assert not isinstance(reopened, Refusal)
    assert not apply_all(ticket, reopened).closed


def walked_tickets() -> list[Ticket]:
    """A ticket in each state a claim can be in: claimed, delivered, sent back (claimed again)."""
    claimed = claimed_ticket()
    delivered = apply_all(claimed, decide(claimed, Deliver("Done", commit="a" * 40), ctx(CODY, 5)))  # type: ignore[arg-type]
    sent_back = apply_all(delivered, decide(delivered, SendBack("Not yet"), ctx(RITA, 6)))  # type: ignore[arg-type]
    return [claimed, delivered, sent_back]


@given(
    index=st.integers(0, 2),
    kind=st.sampled_from(sorted(NOTICE_EVENT_TYPES)),
    data=st.fixed_dictionaries({"attempt": st.integers(1, 9), "claimant": st.sampled_from(["cody", "ruth"])}),
)
def test_a_notice_event_never_moves_a_rail_or_the_claim(
    index: int, kind: EventType, data: dict[str, object]
) -> None:
    """Folding a notice changes only the revision, `closed`, what is recorded of the description,
    the over-budget flag and the watch periods noted overdue."""
    before = walked_tickets()[index]
    event = Event(kind, "railyard", None, at(500), "op", "v1", data)
    after = apply(before, event)
    assert after.revision == before.revision + 1
    unchanged = replace(
        after,
        revision=before.revision,
        closed=before.closed,
        description_digest=before.description_digest,
        description_changed=before.description_changed,
        over_budget=before.over_budget,
        noticed=before.noticed,
    )
    assert unchanged == before
    assert (after.work, after.rails, after.claimant, after.attempt) == (
        before.work,
        before.rails,
        before.claimant,
        before.attempt,
    )


@pytest.mark.parametrize("minutes_given", [0, -5, MAX_CHECK_IN_MINUTES + 1, 9_000_000_000])
def test_the_engine_refuses_a_check_in_outside_one_minute_to_thirty_days(minutes_given: int) -> None:
    """A `Claim` from any door (the parser bounds comments) is refused past the bound: no limit overflows."""
    ticket = Ticket(KEY)
    ticket = apply_all(ticket, decide(ticket, Publish("Resumable uploads"), ctx(OLIVIA, 0)))  # type: ignore[arg-type]

    decision = decide(ticket, Claim(check_in_minutes=minutes_given), ctx(CODY, 1))

    assert isinstance(decision, Refusal) and decision.code is RefusalCode.INVALID_ARGUMENT
    assert str(MAX_CHECK_IN_MINUTES) in decision.reason
