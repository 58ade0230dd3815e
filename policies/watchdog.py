"""The claim watchdog: when a claimed attempt has been silent for longer than its limit.

An attempt's silence starts when it opens (the claim, or the send-back that started it)
and starts again at each sign of life from the claimant: a comment on the issue, a push to
the attempt's branch, a delivery. One silence period is identified by when it started, so
"overdue" is recorded once per period, however often the watchdog looks. Pure: the time
of looking is passed in.
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


@dataclass(frozen=True)
class Watch:
    """What the watchdog knows about one claimed attempt."""

    attempt: int
    claimant: str
    opened_at: datetime
    last_sign_of_life: datetime | None
    limit_minutes: int


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
        try:
            return self.silent_since + timedelta(minutes=bounded_limit(self.limit_minutes))
        except OverflowError:  # silent since near the end of datetime's range
            return datetime.max.replace(tzinfo=self.silent_since.tzinfo)

    def overdue_by(self, now: datetime) -> timedelta:
        """How far past the limit `now` is (zero or negative while within it)."""
        return now - self.deadline


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
