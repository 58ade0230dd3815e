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
- spend, per runner and per model (the delivery's reported `model`; `null` for a delivery that
  named none): `input_tokens`, `output_tokens` and `cost_usd` (an exact decimal string) summed
  over every delivery in the period, whatever became of it; `accepted_tickets`, the tickets
  whose acceptance in the period was of that runner's (that model's) delivery, each once; and
  `cost_per_accepted_ticket` = `cost_usd` / `accepted_tickets` (to 0.000001), `null` when no ticket was
  accepted. Every delivery counts under exactly one runner and one model, so the two cost columns
  have the same sum. The figures are the runner's word (SPEC: delivery evidence), not a bill.
- per requester (the account that published the ticket; the latest `/publish` counts) and per
  label (the labels the issue carried when it was published, recorded on `published` since
  railyard began to record them; a ticket published before that, or without labels, counts under
  `null`; a ticket with two labels counts under both): `tickets` (their tickets with anything the
  report reads in the period), `deliveries` and `sent_back` on those tickets in the period, and
  `send_back_rate` (sent_back / deliveries; None without deliveries) — how well work was specified.

Accounts are told apart by id (a record made before ids were stored, by its login) and shown
by their current login: the one `logins` gives, else the newest the events show.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from policies.events import EventType
from policies.evidence import cost_of, evidence_from_data
from policies.model import Evidence

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


_MICRO = Decimal("0.000001")


def _dollars(value: Decimal) -> str:
    return format(value.quantize(_MICRO).normalize(), "f")


@dataclass
class Spend:
    """What deliveries reported they used, and the tickets accepted on them."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost: Decimal = Decimal(0)
    accepted_tickets: set[str] = field(default_factory=set)

    def add(self, evidence: Evidence | None) -> None:
        """Count one delivery's reported evidence (nothing reported counts as nothing)."""
        if evidence is not None:
            self.input_tokens += evidence.input_tokens or 0
            self.output_tokens += evidence.output_tokens or 0
        self.cost += cost_of(evidence)

    def to_json(self) -> dict[str, Any]:
        """The spend keys of a runner or model item."""
        accepted = len(self.accepted_tickets)
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": _dollars(self.cost),
            "accepted_tickets": accepted,
            "cost_per_accepted_ticket": _dollars(self.cost / accepted) if accepted else None,
        }


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
    spend: Spend = field(default_factory=Spend)

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
            **self.spend.to_json(),
        }


@dataclass
class ModelFigures:
    """One model's deliveries and spend for the period (`model` None: deliveries that named none)."""

    model: str | None
    deliveries: int = 0
    spend: Spend = field(default_factory=Spend)

    def to_json(self) -> dict[str, Any]:
        """The `report --json` model item."""
        return {"model": self.model, "deliveries": self.deliveries, **self.spend.to_json()}


@dataclass
class Specified:
    """How well one requester's (or one label's) tickets were specified: their send-backs."""

    tickets: set[str] = field(default_factory=set)
    deliveries: int = 0
    sent_back: int = 0

    def to_json(self) -> dict[str, Any]:
        """The counting keys of a requester or label item."""
        return {
            "tickets": len(self.tickets),
            "deliveries": self.deliveries,
            "sent_back": self.sent_back,
            "send_back_rate": round(self.sent_back / self.deliveries, 4) if self.deliveries else None,
        }


@dataclass
class RequesterFigures:
    """One requester's tickets for the period."""

    requester: str
    requester_id: int | None
    figures: Specified = field(default_factory=Specified)

    def to_json(self) -> dict[str, Any]:
        """The `report --json` requester item."""
        return {"requester": self.requester, "requester_id": self.requester_id, **self.figures.to_json()}


@dataclass
class LabelFigures:
    """One label's tickets for the period (`label` None: tickets published with no recorded label)."""

    label: str | None
    figures: Specified = field(default_factory=Specified)

    def to_json(self) -> dict[str, Any]:
        """The `report --json` label item."""
        return {"label": self.label, **self.figures.to_json()}


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
    """The period's runners (most deliveries first), reviewers (most decisions first), models (most
    deliveries first), requesters and labels (most tickets first)."""

    runners: list[RunnerFigures]
    reviewers: list[ReviewerFigures]
    models: list[ModelFigures] = field(default_factory=list)
    requesters: list[RequesterFigures] = field(default_factory=list)
    labels: list[LabelFigures] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The `report --json` object."""
        return {
            "runners": [item.to_json() for item in self.runners],
            "reviewers": [item.to_json() for item in self.reviewers],
            "models": [item.to_json() for item in self.models],
            "requesters": [item.to_json() for item in self.requesters],
            "labels": [item.to_json() for item in self.labels],
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
    models: dict[str | None, ModelFigures] = field(default_factory=dict)
    requesters: dict[AccountKey, RequesterFigures] = field(default_factory=dict)
    labels: dict[str | None, LabelFigures] = field(default_factory=dict)
    opened: dict[tuple[str, int], datetime] = field(default_factory=dict)
    delivered: dict[str, tuple[str, int | None, datetime, str | None]] = field(default_factory=dict)
    published: dict[str, tuple[str, int | None, tuple[str, ...]]] = field(default_factory=dict)
    seen: dict[AccountKey, tuple[datetime, str]] = field(default_factory=dict)

    def inside(self, at: datetime) -> bool:
        return (self.since is None or at >= self.since) and (self.until is None or at < self.until)

    def runner(self, login: str, account_id: int | None) -> RunnerFigures:
        return self.runners.setdefault(account_key(login, account_id), RunnerFigures(login, account_id))

    def reviewer(self, login: str, account_id: int | None) -> ReviewerFigures:
        return self.reviewers.setdefault(account_key(login, account_id), ReviewerFigures(login, account_id))

    def model(self, name: str | None) -> ModelFigures:
        return self.models.setdefault(name, ModelFigures(name))

    def specified(self, ticket: str) -> list[Specified]:
        """The requester's and every label's figures a ticket counts in (none before it is published)."""
        if ticket not in self.published:
            return []
        login, account_id, labels = self.published[ticket]
        requester = self.requesters.setdefault(
            account_key(login, account_id), RequesterFigures(login, account_id)
        )
        return [requester.figures] + [
            self.labels.setdefault(label, LabelFigures(label)).figures for label in labels or (None,)
        ]

    def add(self, event: LoggedEvent) -> None:
        key = account_key(event.actor, event.actor_id)
        if key not in self.seen or self.seen[key][0] <= event.at:
            self.seen[key] = (event.at, event.actor)
        inside = self.inside(event.at)
        handler = _HANDLERS.get(event.type)
        if handler is not None:
            handler(self, event, inside)
        if inside:
            for figures in self.specified(event.ticket):
                figures.tickets.add(event.ticket)
                figures.deliveries += event.type is EventType.DELIVERED
                figures.sent_back += event.type is EventType.SENT_BACK


def _published(tally: _Tally, event: LoggedEvent, inside: bool) -> None:
    labels = event.data.get("labels") or ()
    names = tuple(sorted({str(label) for label in labels if isinstance(label, str) and label}))
    tally.published[event.ticket] = (event.actor, event.actor_id, names)


def _opened(tally: _Tally, event: LoggedEvent, inside: bool) -> None:
    tally.opened[(event.ticket, int(event.data["attempt"]))] = event.at
    if event.type is EventType.SENT_BACK:
        if not inside:
            return
        tally.runner(str(event.data.get("runner")), event.data.get("runner_id")).sent_back += 1
        tally.reviewer(event.actor, event.actor_id).sent_back += 1


def _delivered(tally: _Tally, event: LoggedEvent, inside: bool) -> None:
    evidence = evidence_from_data(event.data.get("evidence"))
    model = evidence.model if evidence is not None else None
    tally.delivered[event.ticket] = (event.actor, event.actor_id, event.at, model)
    if not inside:
        return
    figures = tally.runner(event.actor, event.actor_id)
    figures.deliveries += 1
    figures.spend.add(evidence)
    by_model = tally.model(model)
    by_model.deliveries += 1
    by_model.spend.add(evidence)
    opened = tally.opened.get((event.ticket, int(event.data["attempt"])))
    if opened is not None:
        figures.claim_to_delivery.append(_minutes(opened, event.at))


def _accepted(tally: _Tally, event: LoggedEvent, inside: bool) -> None:
    delivery = tally.delivered.get(event.ticket)
    if not inside or event.data.get("renews") is not None:
        return  # a renewal keeps an acceptance standing: no delivery accepted again, no new review
    if delivery is not None:
        figures = tally.runner(delivery[0], delivery[1])
        figures.accepted += 1
        figures.delivery_to_acceptance.append(_minutes(delivery[2], event.at))
        figures.spend.accepted_tickets.add(event.ticket)
        tally.model(delivery[3]).spend.accepted_tickets.add(event.ticket)
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
    EventType.PUBLISHED: _published,
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
    for key, requester in tally.requesters.items():
        requester.requester = current.get(key, requester.requester)
    runners = sorted(tally.runners.values(), key=lambda r: (-r.deliveries, r.runner.casefold()))
    reviewers = sorted(
        tally.reviewers.values(), key=lambda r: (-r.to_json()["decisions"], r.reviewer.casefold())
    )
    models = sorted(tally.models.values(), key=lambda m: (-m.deliveries, m.model is None, m.model or ""))
    requesters = sorted(
        tally.requesters.values(), key=lambda r: (-len(r.figures.tickets), r.requester.casefold())
    )
    labels = sorted(
        tally.labels.values(), key=lambda b: (-len(b.figures.tickets), b.label is None, b.label or "")
    )
    return Report(runners, reviewers, models, requesters, labels)
