"""The release owner's report, computed from the event log alone, so it holds for any past period.

Pure. `report(events, since, until)` reads the events of a repository's tickets (each ticket's
events in revision order; events before `since` are needed only to know who delivered what
was accepted in the period and when its attempt opened) and counts what happened in
`since <= at < until`:

- per runner (the account that delivered): `deliveries`, `accepted` (acceptances of their
  deliveries, of any kind), `sent_back` (their deliveries sent back), `reopened` (tickets they
  held that were reopened), `send_back_rate` (sent_back / deliveries; None without
  deliveries), the median minutes from the attempt's opening (`/claim` or `/send-back`) to its
  delivery, and from a delivery to its acceptance. A delivery after an acceptance opens its own
  attempt and has no claim time.
- per reviewer (the account that decided): `accepted` (independent reviews), `sent_back`,
  `overrides`, `self_verified`, and `decisions` (all of them).

Accounts are told apart by id (a record made before ids were stored, by its login) and shown
by their current login: the one `logins` gives, else the newest the events show.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from policies.events import EventType

AccountKey = int | str


@dataclass(frozen=True)
class LoggedEvent:
    """One event of the log, with the ticket it belongs to."""

    ticket: str
    revision: int
    type: EventType
    actor: str
    actor_id: int | None
    at: datetime
    data: Mapping[str, Any]


@dataclass
class RunnerFigures:
    """One runner's figures for the period."""

    runner: str
    runner_id: int | None
    deliveries: int = 0
    accepted: int = 0
    sent_back: int = 0
    reopened: int = 0
    claim_to_delivery: list[float] = field(default_factory=list)
    delivery_to_acceptance: list[float] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The `report --json` runner item."""
        return {
            "runner": self.runner,
            "runner_id": self.runner_id,
            "deliveries": self.deliveries,
            "accepted": self.accepted,
            "sent_back": self.sent_back,
            "reopened": self.reopened,
            "send_back_rate": round(self.sent_back / self.deliveries, 4) if self.deliveries else None,
            "median_minutes_claim_to_delivery": _median(self.claim_to_delivery),
            "median_minutes_delivery_to_acceptance": _median(self.delivery_to_acceptance),
        }


@dataclass
class ReviewerFigures:
    """One reviewer's decisions in the period."""

    reviewer: str
    reviewer_id: int | None
    accepted: int = 0
    sent_back: int = 0
    overrides: int = 0
    self_verified: int = 0

    def to_json(self) -> dict[str, Any]:
        """The `report --json` reviewer item."""
        return {
            "reviewer": self.reviewer,
            "reviewer_id": self.reviewer_id,
            "decisions": self.accepted + self.sent_back + self.overrides + self.self_verified,
            "accepted": self.accepted,
            "sent_back": self.sent_back,
            "overrides": self.overrides,
            "self_verified": self.self_verified,
        }


@dataclass(frozen=True)
class Report:
    """The period's runners (most deliveries first) and reviewers (most decisions first)."""

    runners: list[RunnerFigures]
    reviewers: list[ReviewerFigures]

    def to_json(self) -> dict[str, Any]:
        """The `report --json` object."""
        return {
            "runners": [item.to_json() for item in self.runners],
            "reviewers": [item.to_json() for item in self.reviewers],
        }


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


def _minutes(start: datetime, end: datetime) -> float:
    return (end - start).total_seconds() / 60


def account_key(login: str | None, account_id: int | None) -> AccountKey:
    """An account by its id; a record without one by its login (case-insensitive)."""
    return account_id if account_id is not None else f"login:{(login or '').casefold()}"


@dataclass
class _Tally:
    since: datetime | None
    until: datetime | None
    runners: dict[AccountKey, RunnerFigures] = field(default_factory=dict)
    reviewers: dict[AccountKey, ReviewerFigures] = field(default_factory=dict)
    opened: dict[tuple[str, int], datetime] = field(default_factory=dict)
    delivered: dict[str, tuple[str, int | None, datetime]] = field(default_factory=dict)
    seen: dict[AccountKey, tuple[datetime, str]] = field(default_factory=dict)

    def inside(self, at: datetime) -> bool:
        return (self.since is None or at >= self.since) and (self.until is None or at < self.until)

    def runner(self, login: str, account_id: int | None) -> RunnerFigures:
        return self.runners.setdefault(account_key(login, account_id), RunnerFigures(login, account_id))

    def reviewer(self, login: str, account_id: int | None) -> ReviewerFigures:
        return self.reviewers.setdefault(account_key(login, account_id), ReviewerFigures(login, account_id))

    def add(self, event: LoggedEvent) -> None:
        key = account_key(event.actor, event.actor_id)
        if key not in self.seen or self.seen[key][0] <= event.at:
            self.seen[key] = (event.at, event.actor)
        handler = _HANDLERS.get(event.type)
        if handler is not None:
            handler(self, event, self.inside(event.at))


def _opened(tally: _Tally, event: LoggedEvent, inside: bool) -> None:
    tally.opened[(event.ticket, int(event.data["attempt"]))] = event.at
    if event.type is EventType.SENT_BACK:
        if not inside:
            return
        tally.runner(str(event.data.get("runner")), event.data.get("runner_id")).sent_back += 1
        tally.reviewer(event.actor, event.actor_id).sent_back += 1


def _delivered(tally: _Tally, event: LoggedEvent, inside: bool) -> None:
    tally.delivered[event.ticket] = (event.actor, event.actor_id, event.at)
    if not inside:
        return
    figures = tally.runner(event.actor, event.actor_id)
    figures.deliveries += 1
    opened = tally.opened.get((event.ticket, int(event.data["attempt"])))
    if opened is not None:
        figures.claim_to_delivery.append(_minutes(opened, event.at))


def _accepted(tally: _Tally, event: LoggedEvent, inside: bool) -> None:
    delivery = tally.delivered.get(event.ticket)
    if not inside:
        return
    if delivery is not None:
        figures = tally.runner(delivery[0], delivery[1])
        figures.accepted += 1
        figures.delivery_to_acceptance.append(_minutes(delivery[2], event.at))
    reviewer = tally.reviewer(event.actor, event.actor_id)
    kind = event.data.get("review")
    if kind == "override":
        reviewer.overrides += 1
    elif kind == "self_verified":
        reviewer.self_verified += 1
    else:
        reviewer.accepted += 1


def _reopened(tally: _Tally, event: LoggedEvent, inside: bool) -> None:
    claimant = event.data.get("previous_claimant")
    if inside and claimant:
        tally.runner(str(claimant), event.data.get("previous_claimant_id")).reopened += 1


_HANDLERS = {
    EventType.CLAIMED: _opened,
    EventType.SENT_BACK: _opened,
    EventType.DELIVERED: _delivered,
    EventType.ACCEPTED: _accepted,
    EventType.REOPENED: _reopened,
}

REPORT_EVENT_TYPES = frozenset(_HANDLERS)
"""The only event types the report reads."""


def report(
    events: Iterable[LoggedEvent],
    since: datetime | None = None,
    until: datetime | None = None,
    logins: Mapping[int, str] | None = None,
) -> Report:
    """The figures of `since <= at < until` (either end open when None), from the events given."""
    tally = _Tally(since, until)
    for event in sorted(events, key=lambda e: (e.ticket, e.revision)):
        tally.add(event)
    current: dict[AccountKey, str] = {key: login for key, (_, login) in tally.seen.items()}
    current.update((logins or {}).items())
    for key, runner in tally.runners.items():
        runner.runner = current.get(key, runner.runner)
    for key, reviewer in tally.reviewers.items():
        reviewer.reviewer = current.get(key, reviewer.reviewer)
    runners = sorted(tally.runners.values(), key=lambda r: (-r.deliveries, r.runner.casefold()))
    reviewers = sorted(
        tally.reviewers.values(), key=lambda r: (-r.to_json()["decisions"], r.reviewer.casefold())
    )
    return Report(runners, reviewers)
