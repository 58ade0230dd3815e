"""Events: the facts the log records. A ticket is the fold of its events."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any


class EventType(StrEnum):
    """Every kind of event the log holds."""

    CREATED = "created"
    PUBLISHED = "published"
    CLAIMED = "claimed"
    DELIVERED = "delivered"
    SENT_BACK = "sent_back"
    REOPENED = "reopened"
    ACCEPTED = "accepted"
    REPOSITORY_OBSERVED = "repository_observed"
    MERGE_STATE_CHANGED = "merge_state_changed"
    DEPLOYMENT_OBSERVED = "deployment_observed"
    DEPLOYMENT_STATE_CHANGED = "deployment_state_changed"
    CLAIM_OVERDUE = "claim_overdue"
    ISSUE_CLOSED = "issue_closed"
    ISSUE_REOPENED = "issue_reopened"
    ACCEPTANCE_INVALIDATED = "acceptance_invalidated"
    DESCRIPTION_CHANGED = "description_changed"
    REVIEW_OVERDUE = "review_overdue"
    OVER_BUDGET = "over_budget"
    REVERTED = "reverted"
    DEPLOYMENT_GATED = "deployment_gated"


RAIL_EVENT_TYPES = frozenset(
    {
        EventType.REPOSITORY_OBSERVED,
        EventType.MERGE_STATE_CHANGED,
        EventType.DEPLOYMENT_OBSERVED,
        EventType.DEPLOYMENT_STATE_CHANGED,
    }
)
"""The only types repository and deployment inputs can produce."""

NOTICE_EVENT_TYPES = frozenset(
    {
        EventType.CLAIM_OVERDUE,
        EventType.ISSUE_CLOSED,
        EventType.ISSUE_REOPENED,
        EventType.ACCEPTANCE_INVALIDATED,
        EventType.DESCRIPTION_CHANGED,
        EventType.REVIEW_OVERDUE,
        EventType.OVER_BUDGET,
        EventType.REVERTED,
        EventType.DEPLOYMENT_GATED,
    }
)
"""What railyard notices without a command (an overdue claim, a delivery waiting too long for
review, the issue closed or reopened, an acceptance that stopped holding, the description
edited, a merged PR reverted, a deployment gated): recorded on the ticket, never moving any of
its three rails."""


@dataclass(frozen=True)
class Event:
    """One recorded fact: who (and in which role or relation), when, under which policy."""

    type: EventType
    actor: str
    role: str | None
    at: datetime
    operation_id: str
    policy_version: str
    data: Mapping[str, Any] = field(default_factory=dict)
    actor_id: int | None = None  # the actor's GitHub user id; `actor` is the login it had then


@dataclass(frozen=True)
class RailEvent(Event):
    """An event from the repository or deployment rail: it can never touch WorkState."""

    def __post_init__(self) -> None:
        if self.type not in RAIL_EVENT_TYPES:
            raise ValueError(f"{self.type} is not a rail event")
