"""The watchdog's clocks: a claimed attempt's silence and deadline, a delivery's wait for review.

An attempt's silence starts when it opens (the claim, or the send-back that started it)
and starts again at each sign of life from the claimant: a comment on the issue (one that is
only `/status` or `/help` aside), a push to the attempt's branch, a delivery. One silence
period is identified by when it started, so "overdue" is recorded once per period, however
often the watchdog looks. When `claims.max_attempt_hours` is set, the attempt also has an
absolute deadline from its opening that no sign of life moves. A delivery waits for a
decision at most `reviews.max_wait_hours`. Pure: the time of looking is passed in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

DEFAULT_MAX_SILENCE_MINUTES = 240
"""`claims.max_silence_minutes` when `.github/railyard.yml` does not set it."""
MAX_SILENCE_MINUTES = 525_600
"""The longest silence limit there is (a year): the configuration refuses more, and a limit
stored before that bound existed is read as this, so no limit overflows a date."""
MAX_ATTEMPT_HOURS = 8760
"""The longest `claims.max_attempt_hours` there is (a year), for the same reason."""
DEFAULT_REVIEW_WAIT_HOURS = 72
"""`reviews.max_wait_hours` when `.github/railyard.yml` does not set it."""
MAX_REVIEW_WAIT_HOURS = 8760
"""The longest `reviews.max_wait_hours` there is (a year)."""

SILENCE = "silence"
DEADLINE = "deadline"
REVIEW = "review"
"""The kinds of clock (`railyard check`'s `kind` column; `claim_overdue`'s `reason`)."""


@dataclass(frozen=True)
class Watch:
    """What the watchdog knows about one claimed attempt."""

    attempt: int
    claimant: str
    opened_at: datetime
    last_sign_of_life: datetime | None
    limit_minutes: int
    max_attempt_hours: int | None = None  # None: the attempt has no absolute deadline


@dataclass(frozen=True)
class Silence:
    """One silence period of an attempt: since when, and how long it may last."""

    attempt: int
    claimant: str
    silent_since: datetime
    limit_minutes: int

    @property
    def deadline(self) -> datetime:
        """The last moment the attempt is still within its limit (the end of time, at worst)."""
        return later(self.silent_since, timedelta(minutes=bounded_limit(self.limit_minutes)))

    def overdue_by(self, now: datetime) -> timedelta:
        """How far past the limit `now` is (zero or negative while within it)."""
        return now - self.deadline


def later(moment: datetime, span: timedelta) -> datetime:
    """`moment + span`, or the end of time when that overflows (a date near year 9999)."""
    try:
        return moment + span
    except OverflowError:
        return datetime.max.replace(tzinfo=moment.tzinfo)


def bounded_hours(hours: int, most: int) -> int:
    """An hours limit as the watchdog applies it: from one hour to `most` (see `bounded_limit`)."""
    return min(max(hours, 1), most)


def bounded_limit(minutes: int) -> int:
    """A silence limit as the watchdog applies it: from one minute to `MAX_SILENCE_MINUTES`.

    The configuration and `/claim --check-in` refuse anything outside; this keeps a value
    stored before those bounds (or written into the database by hand) from stopping anything.
    """
    return min(max(minutes, 1), MAX_SILENCE_MINUTES)


def silence_limit(check_in_minutes: int | None, max_silence_minutes: int | None) -> int:
    """`/claim --check-in MINUTES` when given, else the repository's `claims.max_silence_minutes`."""
    if check_in_minutes is not None:
        return bounded_limit(check_in_minutes)
    if max_silence_minutes is not None:
        return bounded_limit(max_silence_minutes)
    return DEFAULT_MAX_SILENCE_MINUTES


def current_silence(watch: Watch) -> Silence:
    """The silence period the attempt is in: since its latest sign of life, or since it opened.

    A sign of life from before the attempt opened (a push to the branch before the claim)
    does not shorten it.
    """
    since = watch.opened_at
    if watch.last_sign_of_life is not None and watch.last_sign_of_life > since:
        since = watch.last_sign_of_life
    return Silence(watch.attempt, watch.claimant, since, watch.limit_minutes)


def overdue(watch: Watch, now: datetime) -> Silence | None:
    """The silence period when it has lasted longer than the limit at `now`, else None."""
    period = current_silence(watch)
    return period if now > period.deadline else None


@dataclass(frozen=True)
class Deadline:
    """An attempt's absolute deadline: `hours` after it opened, whatever signs of life it shows."""

    attempt: int
    claimant: str
    opened_at: datetime
    hours: int

    @property
    def due_at(self) -> datetime:
        """The last moment the attempt is within its deadline (the end of time, at worst)."""
        return later(self.opened_at, timedelta(hours=bounded_hours(self.hours, MAX_ATTEMPT_HOURS)))

    def overdue_by(self, now: datetime) -> timedelta:
        """How far past the deadline `now` is (zero or negative before it)."""
        return now - self.due_at


def deadline(watch: Watch) -> Deadline | None:
    """The attempt's deadline, when `claims.max_attempt_hours` gave it one; signs of life never move it."""
    if watch.max_attempt_hours is None:
        return None
    return Deadline(watch.attempt, watch.claimant, watch.opened_at, watch.max_attempt_hours)


def past_deadline(watch: Watch, now: datetime) -> Deadline | None:
    """The attempt's deadline when `now` is past it, else None."""
    found = deadline(watch)
    return found if found is not None and now > found.due_at else None


@dataclass(frozen=True)
class ReviewWait:
    """A delivery waiting for a decision: which attempt, by whom, since when, for how long at most."""

    attempt: int
    runner: str
    delivered_at: datetime
    hours: int
    delivery: str  # the delivery's operation id: one wait per delivery

    @property
    def due_at(self) -> datetime:
        """The last moment the delivery may wait (the end of time, at worst)."""
        return later(self.delivered_at, timedelta(hours=bounded_hours(self.hours, MAX_REVIEW_WAIT_HOURS)))

    def overdue_by(self, now: datetime) -> timedelta:
        """How far past its wait `now` is (zero or negative before it)."""
        return now - self.due_at


def review_wait_hours(stored: int | None) -> int | None:
    """`reviews.max_wait_hours` as stored beside the delivery: None (nothing stored yet) is the
    default, 0 is `null` in the file (not watched), anything else bounded."""
    if stored is None:
        return DEFAULT_REVIEW_WAIT_HOURS
    if stored <= 0:
        return None
    return bounded_hours(stored, MAX_REVIEW_WAIT_HOURS)


def review_overdue(wait: ReviewWait, now: datetime) -> bool:
    """Whether the delivery has waited past its limit at `now`."""
    return now > wait.due_at


@dataclass(frozen=True)
class Clocks:
    """What the watchdog judges a ticket by beside its snapshot: its current attempt's watch
    (while claimed) and its delivery's wait for review (while delivered)."""

    watch: Watch | None = None
    review: ReviewWait | None = None


def ticket_number_from_branch(pattern: str | None, branch: str) -> int | None:
    """The ticket a branch belongs to by `tickets.branch_pattern` (`agent/{number}-*`), or None.

    `{number}` stands for the ticket's number and `*` for any text; everything else must
    match literally. A pattern without `{number}` names no ticket.
    """
    if not pattern or "{number}" not in pattern:
        return None
    parts = [re.escape(piece).replace(r"\*", ".*") for piece in pattern.split("{number}")]
    match = re.fullmatch("([0-9]+)".join(parts), branch)
    if match is None:
        return None
    numbers = {int(group) for group in match.groups()}
    return numbers.pop() if len(numbers) == 1 else None
