"""Folding: `apply(ticket, event)` answers the ticket after one event, `apply_all` after several.

A ticket is rebuilt by folding its events in order. Rail events go to the rails
(`policies.rails`); every other event has one applier here. `policies.engine` decides which
events a command produces; folding refuses nothing, performs no I/O and reads no clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from decimal import Decimal

from policies.events import RAIL_EVENT_TYPES, Event, EventType, RailEvent
from policies.evidence import cost_of, evidence_from_data
from policies.model import Delivery, Feedback, Review, Ticket, same_account, same_login
from policies.notices import noticed
from policies.rails import Rails, apply_rail_event
from policies.reverts import with_revert
from policies.states import DeploymentState, ReviewKind, WorkState


def apply(ticket: Ticket, event: Event) -> Ticket:
    """The ticket after one event; its revision rises by exactly one."""
    ticket = replace(ticket, revision=ticket.revision + 1)
    if event.type in RAIL_EVENT_TYPES:
        rail_event = event if isinstance(event, RailEvent) else RailEvent(**vars(event))
        return replace(ticket, rails=apply_rail_event(ticket.rails, rail_event))
    return _APPLIERS[event.type](_recognise(ticket, event), event)


def _recognise(ticket: Ticket, event: Event) -> Ticket:
    """The owner and claimant as of the actor's event: an id adopted, a renamed login updated.

    A relation recorded before railyard stored ids adopts the id of its first event from an
    account with that login; from then on only the id counts, and each event by the account
    shows its current login.
    """
    if event.actor_id is None:
        return ticket
    if ticket.owner is not None and same_account(event.actor, event.actor_id, ticket.owner, ticket.owner_id):
        ticket = replace(ticket, owner=event.actor, owner_id=event.actor_id)
    if ticket.claimant is not None and same_account(
        event.actor, event.actor_id, ticket.claimant, ticket.claimant_id
    ):
        ticket = replace(ticket, claimant=event.actor, claimant_id=event.actor_id)
    delivery = ticket.last_delivery
    if delivery is not None and delivery.runner_id is None and same_login(event.actor, delivery.runner):
        ticket = replace(ticket, last_delivery=replace(delivery, runner_id=event.actor_id))
    return ticket


def apply_all(ticket: Ticket, events: tuple[Event, ...] | list[Event]) -> Ticket:
    """Fold several events in order."""
    for event in events:
        ticket = apply(ticket, event)
    return ticket


def _parse_time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def _created(ticket: Ticket, event: Event) -> Ticket:
    environments = event.data.get("environments", [])
    rails = Rails(deployments={env: DeploymentState.NOT_DEPLOYED for env in environments})
    return replace(ticket, work=WorkState.DRAFT, rails=rails)


def _published(ticket: Ticket, event: Event) -> Ticket:
    no_code = bool(event.data["no_code"])
    rails = ticket.rails.not_applicable() if no_code else ticket.rails
    owner, owner_id = event.data["owner"], event.data.get("owner_id")
    digest = event.data.get("description_digest") or ticket.description_digest
    return replace(
        ticket,
        work=WorkState.OPEN,
        owner=owner,
        owner_id=owner_id,
        no_code=no_code,
        rails=rails,
        description_digest=digest,
        description_changed=None,
    )


def _claimed(ticket: Ticket, event: Event) -> Ticket:
    return replace(
        ticket,
        work=WorkState.CLAIMED,
        claimant=event.actor,
        claimant_id=event.actor_id,
        attempt=event.data["attempt"],
        check_in_minutes=event.data["check_in_minutes"],
        attempt_branch=event.data["branch"],
        review=None,
        sent_back=False,
        description_changed=None,  # the claimant took the description as it is now
    )


def _delivered(ticket: Ticket, event: Event) -> Ticket:
    data = event.data
    delivery = Delivery(
        attempt=data["attempt"],
        runner=event.actor,
        summary=data["summary"],
        branch=data["branch"],
        commit=data["commit"],
        pull_request=data["pull_request"],
        artifacts=tuple(data["artifacts"]),
        comment_id=data["comment_id"],
        comment_at=_parse_time(data["comment_at"]),
        operation_id=event.operation_id,
        at=event.at,
        runner_id=event.actor_id,
        tree=data.get("tree"),
        evidence=evidence_from_data(data.get("evidence")),
    )
    work = (delivery.attempt, delivery.commit, delivery.artifacts)
    if not ticket.delivered_work and ticket.last_delivery is not None:  # kept before every one was
        last = ticket.last_delivery
        ticket = replace(ticket, delivered_work=((last.attempt, last.commit, last.artifacts),))
    cost = format(Decimal(ticket.cost_usd) + cost_of(delivery.evidence), "f")
    return replace(
        ticket,
        work=WorkState.DELIVERED,
        attempt=data["attempt"],
        attempt_branch=data["branch"] or ticket.attempt_branch,
        last_delivery=delivery,
        deliveries=ticket.deliveries + 1,
        delivered_work=(*ticket.delivered_work, work),
        cost_usd=cost,
        input_tokens=ticket.input_tokens + ((delivery.evidence and delivery.evidence.input_tokens) or 0),
        output_tokens=ticket.output_tokens + ((delivery.evidence and delivery.evidence.output_tokens) or 0),
        review=None,
        sent_back=False,
    )


def _accepted(ticket: Ticket, event: Event) -> Ticket:
    """An acceptance, or its renewal; one recorded before trees, CI and expiry were bound has
    none of them (CI `none`, expiry from when it was recorded)."""
    data = event.data
    ci = data.get("ci") or {}
    review = Review(
        reviewer=event.actor,
        kind=ReviewKind(data["review"]),
        attempt=data["attempt"],
        commit=data["commit"],
        reason=data["reason"],
        at=event.at,
        reviewer_id=event.actor_id,
        role=event.role,
        decided_at=_parse_time(data.get("decided_at")),
        tree=data.get("tree"),
        ci=str(ci.get("state") or "none"),
        ci_checks=tuple(ci.get("checks") or ()),
        description_digest=data.get("description_digest"),
        policy_version=event.policy_version,
        revision=ticket.revision,
        renews=data.get("renews"),
        expires_at=_parse_time(data.get("expires_at")),
        expiry_bound="expires_at" in data,
    )
    # Bound to a description edited after the accepting comment: text its reviewer did not see.
    unseen = "acceptance" if data.get("description_edited_at") else None
    return replace(ticket, work=WorkState.ACCEPTED, review=review, description_changed=unseen)


def _acceptance_invalidated(ticket: Ticket, event: Event) -> Ticket:
    review = ticket.review
    if review is None or review.revision != event.data.get("acceptance") or review.invalidated:
        return ticket  # a later acceptance replaced the one it judged
    return replace(ticket, review=replace(review, invalidated=str(event.data["reason"])))


def _reverted(ticket: Ticket, event: Event) -> Ticket:
    """A merged PR reverted the ticket's merge: kept beside the rails, which it does not move."""
    reverted, by = event.data.get("pull_request"), event.data.get("reverted_by")
    if not isinstance(reverted, int) or not isinstance(by, int):
        return ticket  # not what `policies.reverts` records: nothing to keep
    return replace(ticket, reverts=with_revert(ticket.reverts, reverted, by))


def _description_changed(ticket: Ticket, event: Event) -> Ticket:
    since = {WorkState.ACCEPTED: "acceptance", WorkState.CLAIMED: "claim", WorkState.DELIVERED: "claim"}
    read = event.data.get("read_by_acceptance") is True  # the text the acceptance bound: no change since
    changed = since.get(ticket.work) if ticket.work and not read else None
    # The latest edit railyard knows of, whatever order their webhooks came in (None: none said when).
    times = (ticket.description_edited_at, _parse_time(event.data.get("edited_at")))
    edited_at = max((moment for moment in times if moment is not None), default=None)
    return replace(
        ticket,
        description_digest=event.data.get("new_digest"),
        description_changed=changed or ticket.description_changed,
        description_edited_at=edited_at,
    )


def _feedback(event: Event, kind: str, text: str | None, attempt: int) -> Feedback | None:
    if not text:
        return None
    return Feedback(kind, str(text), event.actor, event.actor_id, event.at, attempt)


def _sent_back(ticket: Ticket, event: Event) -> Ticket:
    data = event.data
    feedback = _feedback(
        event, "sent_back", data.get("feedback"), data.get("previous_attempt", ticket.attempt)
    )
    return replace(
        ticket,
        work=WorkState.CLAIMED,
        attempt=data["attempt"],
        review=None,
        sent_back=True,
        feedback=feedback or ticket.feedback,
    )


def _reopened(ticket: Ticket, event: Event) -> Ticket:
    feedback = _feedback(event, "reopened", event.data.get("reason"), ticket.attempt)
    return replace(
        ticket,
        feedback=feedback or ticket.feedback,
        work=WorkState.OPEN,
        claimant=None,
        claimant_id=None,
        check_in_minutes=None,
        attempt_branch=None,
        review=None,
        sent_back=False,
        # A person's rethink (a reviewer, the owner, a maintainer) counts the loop limit afresh;
        # the claimant giving the work up or an agent does not (else an agent could reset it).
        reopened_at_attempt=ticket.attempt if event.data.get("counts_afresh") else ticket.reopened_at_attempt,
    )


def _recorded_only(ticket: Ticket, event: Event) -> Ticket:
    """`deployment_gated` is history for people to read; it changes nothing."""
    return ticket


def _issue_closed(ticket: Ticket, event: Event) -> Ticket:
    return replace(ticket, closed=True)


def _issue_reopened(ticket: Ticket, event: Event) -> Ticket:
    return replace(ticket, closed=False)


_APPLIERS: dict[EventType, Callable[[Ticket, Event], Ticket]] = {
    EventType.CREATED: _created,
    EventType.PUBLISHED: _published,
    EventType.CLAIMED: _claimed,
    EventType.DELIVERED: _delivered,
    EventType.ACCEPTED: _accepted,
    EventType.SENT_BACK: _sent_back,
    EventType.REOPENED: _reopened,
    EventType.CLAIM_OVERDUE: noticed,
    EventType.REVIEW_OVERDUE: noticed,
    EventType.DEPLOYMENT_GATED: _recorded_only,
    EventType.ISSUE_CLOSED: _issue_closed,
    EventType.ISSUE_REOPENED: _issue_reopened,
    EventType.ACCEPTANCE_INVALIDATED: _acceptance_invalidated,
    EventType.DESCRIPTION_CHANGED: _description_changed,
    EventType.OVER_BUDGET: lambda ticket, event: replace(ticket, over_budget=True),
    EventType.REVERTED: _reverted,
}
