"""Ticket snapshots and events to and from JSON-ready dicts, for the database."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import MISSING, fields
from datetime import datetime
from typing import Any, TypeVar

from policies.audit import AuditedEvent
from policies.check_facts import CheckFact, check_key
from policies.events import RAIL_EVENT_TYPES, Event, EventType, RailEvent
from policies.evidence import evidence_from_data, evidence_to_data
from policies.model import Delivery, Evidence, Feedback, Review, Ticket, TicketKey
from policies.rails import (
    BranchFact,
    DeploymentFact,
    MergeabilityFact,
    PullRequestFact,
    Rails,
)
from policies.states import DeploymentState, IntegrationState, ReviewKind, WorkState

_T = TypeVar("_T")
_CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "kind": ReviewKind,
    "artifacts": tuple,
    "ci_checks": tuple,
    "same_second_heads": tuple,
    "evidence": evidence_from_data,
}


def _flat(value: Any) -> dict[str, Any]:
    out = {}
    for f in fields(value):
        item = getattr(value, f.name)
        if isinstance(item, Evidence):
            item = evidence_to_data(item)
        out[f.name] = item.isoformat() if isinstance(item, datetime) else item
    return out


def _is_time(name: str) -> bool:
    return name == "at" or name.endswith("_at")


def _unflat(cls: type[_T], data: Mapping[str, Any], converters: Mapping[str, Any] = _CONVERTERS) -> _T:
    values = {}
    for f in fields(cls):  # type: ignore[arg-type]
        # A field added later (an account id) is absent from older snapshots: its default then.
        if f.name in data or (f.default is MISSING and f.default_factory is MISSING):
            item = data[f.name]
        else:  # a mapping added later has a factory (`DeploymentFact.merges`)
            item = f.default if f.default_factory is MISSING else f.default_factory()
        if item is not None and _is_time(f.name):
            item = datetime.fromisoformat(item)
        elif item is not None and f.name in converters:
            item = converters[f.name](item)
        values[f.name] = item
    return cls(**values)


def _iso_or_none(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def _time_or_none(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def rails_to_data(rails: Rails) -> dict[str, Any]:
    """The rails and their evidence as JSON-ready data."""
    return {
        "applicable": rails.applicable,
        "integration": rails.integration.value,
        "deployments": {env: state.value for env, state in rails.deployments.items()},
        "branches": {name: _flat(fact) for name, fact in rails.branches.items()},
        "pull_requests": [_flat(pr) for pr in rails.pull_requests.values()],
        "checks": [_flat(check) for check in rails.checks.values()],
        "mergeability": [_flat(answer) for answer in rails.mergeability.values()],
        "deployment_facts": [_flat(d) for d in rails.deployment_facts.values()],
        "seen": sorted(rails.seen),
    }


def rails_from_data(data: Mapping[str, Any]) -> Rails:
    """The inverse of `rails_to_data`."""
    prs = (_unflat(PullRequestFact, pr) for pr in data["pull_requests"])
    checks = (_unflat(CheckFact, c) for c in data["checks"])
    answers = (_unflat(MergeabilityFact, m) for m in data["mergeability"])
    deployments = (_unflat(DeploymentFact, d) for d in data["deployment_facts"])
    return Rails(
        applicable=data["applicable"],
        integration=IntegrationState(data["integration"]),
        deployments={env: DeploymentState(s) for env, s in data["deployments"].items()},
        branches={name: _unflat(BranchFact, b) for name, b in data["branches"].items()},
        pull_requests={pr.number: pr for pr in prs},
        checks={check_key(c): c for c in checks},
        mergeability={(m.number, m.head_sha, m.base_ref): m for m in answers},
        deployment_facts={d.deployment_id: d for d in deployments},
        seen=frozenset(data["seen"]),
    )


def ticket_to_data(ticket: Ticket) -> dict[str, Any]:
    """A ticket snapshot as JSON-ready data (the key lives in its own columns)."""
    return {
        "work": ticket.work.value if ticket.work else None,
        "no_code": ticket.no_code,
        "owner": ticket.owner,
        "owner_id": ticket.owner_id,
        "claimant": ticket.claimant,
        "claimant_id": ticket.claimant_id,
        "attempt": ticket.attempt,
        "check_in_minutes": ticket.check_in_minutes,
        "attempt_branch": ticket.attempt_branch,
        "last_delivery": _flat(ticket.last_delivery) if ticket.last_delivery else None,
        "deliveries": ticket.deliveries,
        "delivered_work": [
            [attempt, commit, list(artifacts)] for attempt, commit, artifacts in ticket.delivered_work
        ],
        "cost_usd": ticket.cost_usd,
        "input_tokens": ticket.input_tokens,
        "output_tokens": ticket.output_tokens,
        "over_budget": ticket.over_budget,
        "review": _flat(ticket.review) if ticket.review else None,
        "feedback": _flat(ticket.feedback) if ticket.feedback else None,
        "description_digest": ticket.description_digest,
        "description_changed": ticket.description_changed,
        "description_edited_at": _iso_or_none(ticket.description_edited_at),
        "sent_back": ticket.sent_back,
        "reopened_at_attempt": ticket.reopened_at_attempt,
        "closed": ticket.closed,
        "reverts": [list(pair) for pair in ticket.reverts],
        "noticed": list(ticket.noticed),
        "rails": rails_to_data(ticket.rails),
    }


def ticket_from_data(key: TicketKey, revision: int, data: Mapping[str, Any]) -> Ticket:
    """The inverse of `ticket_to_data`."""
    delivery, review = data["last_delivery"], data["review"]
    return Ticket(
        key=key,
        revision=revision,
        work=WorkState(data["work"]) if data["work"] else None,
        no_code=data["no_code"],
        owner=data["owner"],
        claimant=data["claimant"],
        owner_id=data.get("owner_id"),  # absent from snapshots written before ids were stored
        claimant_id=data.get("claimant_id"),
        attempt=data["attempt"],
        check_in_minutes=data["check_in_minutes"],
        attempt_branch=data["attempt_branch"],
        last_delivery=_unflat(Delivery, delivery) if delivery else None,
        deliveries=data["deliveries"],
        # Absent from snapshots written before every delivery was kept and costs were summed.
        delivered_work=tuple((int(a), c, tuple(arts)) for a, c, arts in data.get("delivered_work") or ()),
        cost_usd=data.get("cost_usd") or "0",
        input_tokens=data.get("input_tokens", 0),
        output_tokens=data.get("output_tokens", 0),
        over_budget=data.get("over_budget", False),
        review=_unflat(Review, review) if review else None,
        # Absent from snapshots written before acceptances were bound to the description.
        feedback=_unflat(Feedback, data["feedback"], {}) if data.get("feedback") else None,
        description_digest=data.get("description_digest"),
        description_changed=data.get("description_changed"),
        # Absent from snapshots written before edits' times were recorded.
        description_edited_at=_time_or_none(data.get("description_edited_at")),
        sent_back=data.get("sent_back", False),  # absent from snapshots written before it existed
        reopened_at_attempt=data.get("reopened_at_attempt"),  # the same
        closed=data.get("closed", False),  # absent from snapshots written before it existed
        reverts=tuple((int(a), int(b)) for a, b in data.get("reverts") or ()),
        noticed=tuple(str(period) for period in data.get("noticed") or ()),  # absent before it existed
        rails=rails_from_data(data["rails"]),
    )


def event_from_row(row: Mapping[str, Any]) -> Event:
    """An event as read back from the `ticket_events` table (a `RailEvent` for rail types)."""
    kind = EventType(row["type"])
    cls = RailEvent if kind in RAIL_EVENT_TYPES else Event
    return cls(
        type=kind,
        actor=row["actor"],
        role=row["role"],
        at=row["at"],
        operation_id=row["operation_id"],
        policy_version=row["policy_version"],
        data=row["data"],
        actor_id=row.get("actor_id"),
    )


def audit_event(row: Mapping[str, Any]) -> AuditedEvent:
    """A `ticket_events` row (as written or as read back) as the audit chain sees it."""
    return AuditedEvent(
        revision=row["revision"],
        type=row["type"],
        actor=row["actor"],
        actor_id=row.get("actor_id"),
        role=row["role"],
        at=row["at"],
        operation_id=row["operation_id"],
        policy_version=row["policy_version"],
        data=row["data"],
        digest=row.get("digest"),
    )
