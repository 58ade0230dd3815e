"""The `/accept` guard: what an acceptance binds, who may never accept, CI required, renewal of
one that no longer holds (SPEC *Acceptance that stays true*), and independence. Pure."""

from __future__ import annotations

from typing import Any

from policies.acceptance import InvalidReason, Standing, Validity, expires_at, judge
from policies.commands import Accept, AcceptMode, Context
from policies.decisions import command_label as _name
from policies.decisions import event_for as _event
from policies.decisions import iso as _iso
from policies.decisions import missing_text as _missing
from policies.decisions import stale_decision
from policies.events import Event, EventType
from policies.model import Delivery, Review, Ticket
from policies.refusals import Refusal, RefusalCode
from policies.states import Qualification, ReviewKind, SelfVerification, WorkState
from policies.transitions import Transition

Decision = tuple[Event, ...] | Refusal


def agent_refusal(command: Accept, ctx: Context) -> Refusal | None:
    """`agents_cannot_accept` for a Bot account or one `agents:` names, whatever its roles and
    the ticket's state (unless `acceptance.by: anyone`): an agent never accepts in any form."""
    if not ctx.actor_is_agent or ctx.agents_may_accept:
        return None
    return Refusal(
        RefusalCode.AGENTS_CANNOT_ACCEPT,
        f"{_name(command)}: @{ctx.actor.login} is an agent (a bot, or listed under agents:) "
        "and agents never accept work, their own or another's.",
        "Ask a person who is a reviewer to /accept.",
    )


def accept_guard(
    ticket: Ticket, command: Accept, ctx: Context, row: Transition, used: Qualification
) -> Decision:
    delivery = ticket.current_delivery
    assert delivery is not None  # a delivered or accepted ticket always has its delivery
    renewing = standing_of(ticket, ctx) if ticket.work is WorkState.ACCEPTED else None
    stale = stale_decision(ticket, command, ctx)
    if stale is not None:
        return stale
    runner = is_runner(ticket, delivery, ctx)
    refusal = _accept_refusal(command, ctx, runner)
    if refusal is not None:
        return refusal
    ci = ctx.ci_state or "none"
    if ctx.acceptance_ci_required and ci != "passed":
        names = ", ".join(ctx.ci_checks) or "no check has run"
        return Refusal(
            RefusalCode.CI_NOT_PASSED,
            f"{_name(command)}: CI on the delivered commit {_short(delivery.commit)} is {ci} "
            f"({names}); this repository accepts only work whose CI passed (acceptance.ci: require).",
            "Wait for the checks to pass (or fix them and deliver again), then /accept.",
        )
    kind = {
        AcceptMode.REVIEW: ReviewKind.INDEPENDENT,
        AcceptMode.SELF: ReviewKind.SELF_VERIFIED,
        AcceptMode.OVERRIDE: ReviewKind.OVERRIDE,
    }[command.mode]
    decided_at = ctx.comment_at or ctx.at
    data: dict[str, Any] = {
        "attempt": delivery.attempt,
        "commit": delivery.commit,
        "tree": ctx.tree or delivery.tree,
        "delivery_operation_id": delivery.operation_id,
        "review": kind.value,
        "reason": command.reason.strip() or None,
        "decided_at": _iso(decided_at),
        "description_digest": ctx.description_digest or ticket.description_digest,
        "ci": {"state": ci, "checks": list(ctx.ci_checks)},
    }
    edited_at = ticket.description_edited_at
    if edited_at is not None and edited_at > decided_at:
        # Edited after the comment was written: the text read now is not what the reviewer saw.
        data["description_edited_at"] = _iso(edited_at)
    written = Review(
        ctx.actor.login, kind, delivery.attempt, delivery.commit, None, ctx.at, decided_at=decided_at
    )
    expiry = expires_at(written, ctx.acceptance_expires_after_days)
    data["expires_at"] = _iso(expiry)
    events: list[Event] = []
    review = ticket.review
    if renewing is not None and review is not None:
        data["renews"] = review.revision
        if not renewing.recorded and renewing.reason is not None:
            events.append(_lapse(ctx, review.revision, renewing))
    events.append(_event(EventType.ACCEPTED, ctx, used, data))
    if expiry is not None and expiry <= ctx.at:  # a late redelivery: recorded, and at once expired
        late = Validity(False, InvalidReason.EXPIRED, expiry)
        events.append(_lapse(ctx, ticket.revision + len(events), late))
    return tuple(events)


def standing_of(ticket: Ticket, ctx: Context) -> Validity:
    """The current acceptance judged at the command's time, with what the command's edge read."""
    assert ticket.review is not None  # an accepted ticket always has its review
    standing = Standing(
        at=ctx.at,
        expires_after_days=ctx.acceptance_expires_after_days,
        self_verification=ctx.self_verification,
        high_risk=ctx.high_risk,
        reviewer_roles=ctx.reviewer_roles,
    )
    return judge(ticket.review, standing)


def _lapse(ctx: Context, acceptance: int, validity: Validity) -> Event:
    """`acceptance_invalidated` for the acceptance at revision `acceptance`, recorded by railyard."""
    assert validity.reason is not None
    data: dict[str, Any] = {"acceptance": acceptance, "reason": validity.reason.value}
    if validity.expires_at is not None:
        data["expires_at"] = validity.expires_at.isoformat()
    return Event(
        EventType.ACCEPTANCE_INVALIDATED, "railyard", None, ctx.at, ctx.operation_id, ctx.policy_version, data
    )


def _short(sha: str | None) -> str:
    return sha[:12] if sha else "(none)"


def is_runner(ticket: Ticket, delivery: Delivery, ctx: Context) -> bool:
    """Whether the actor made the delivery under review.

    A delivery recorded before ids were stored has no runner id; its runner is then the
    claimant (only the claimant delivers, and the claim holds until the ticket is reopened),
    so a renamed runner is still recognised by the claimant's id.
    """
    if ctx.actor.is_account(delivery.runner, delivery.runner_id):
        return True
    return delivery.runner_id is None and ctx.actor.is_account(ticket.claimant, ticket.claimant_id)


def _accept_refusal(command: Accept, ctx: Context, is_runner: bool) -> Refusal | None:
    if command.mode is AcceptMode.OVERRIDE:
        if not command.reason.strip():
            return _missing(command, "a reason", "/accept --override Hotfix verified in staging.")
        return None
    if command.mode is AcceptMode.REVIEW:
        if is_runner:
            return Refusal(
                RefusalCode.NOT_INDEPENDENT,
                f"/accept: @{ctx.actor.login} delivered this work and cannot review it.",
                "Ask another reviewer; /accept --self records self-verification where allowed.",
            )
        return None
    if not is_runner:
        return Refusal(
            RefusalCode.SELF_NOT_ALLOWED,
            "/accept --self is only for the runner who delivered the work.",
            "Use /accept to record an independent review.",
        )
    if ctx.self_verification is SelfVerification.NEVER:
        return Refusal(
            RefusalCode.SELF_NOT_ALLOWED,
            "/accept --self is disabled in this repository (self_verification: never).",
            "Ask another reviewer to /accept.",
        )
    if ctx.high_risk:
        return Refusal(
            RefusalCode.SELF_NOT_ALLOWED,
            "/accept --self: this ticket is high-risk and needs an independent review.",
            "Ask another reviewer to /accept.",
        )
    return None
