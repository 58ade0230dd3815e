"""The engine: `decide(ticket, command, context)` and `apply(ticket, event)`.

`decide` checks the current state, the actor's role or relation and the row's guards,
and answers with events or a refusal; `apply` (in `policies.fold`, importable from here)
folds one event into the ticket. Together they are the whole work rail. Neither performs
I/O or reads a clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from policies.acceptance import InvalidReason, Standing, Validity, expires_at, judge
from policies.commands import (
    MAX_CHECK_IN_MINUTES,
    Accept,
    AcceptMode,
    Claim,
    Command,
    CommandName,
    Context,
    Deliver,
    Draft,
    Publish,
    Reopen,
    SendBack,
)
from policies.decisions import command_label as _name
from policies.decisions import stale_decision
from policies.events import Event, EventType, RailEvent
from policies.fold import apply, apply_all
from policies.model import Delivery, Review, Ticket
from policies.rails import Observation, ObservationContext, decide_observation
from policies.refusals import Refusal, RefusalCode
from policies.states import (
    Qualification,
    Relation,
    ReviewKind,
    Role,
    SelfVerification,
    WorkState,
)
from policies.transitions import Transition, rows_for

__all__ = ["LABEL", "Decision", "Guard", "apply", "apply_all", "decide", "holds", "observe"]

Decision = tuple[Event, ...] | Refusal


def holds(ticket: Ticket, ctx: Context, qualification: Qualification) -> bool:
    """Whether the actor holds a role, or stands in a relation to the ticket."""
    if isinstance(qualification, Role):
        return qualification in ctx.actor.roles
    if qualification is Relation.OWNER:
        return ctx.actor.is_account(ticket.owner, ticket.owner_id)
    return ctx.actor.is_account(ticket.claimant, ticket.claimant_id)


def decide(ticket: Ticket, command: Command, ctx: Context) -> Decision:
    """Events that carry out the command, or a refusal saying why and what would work."""
    if ctx.config_error is not None:
        return Refusal(
            RefusalCode.CONFIG_ERROR,
            f"{_name(command)}: .github/railyard.yml has problems, so commands are refused until it is fixed:"
            f"\n{ctx.config_error}",
            "Fix the file on the default branch, then run the command again.",
        )
    if ctx.commands_per_hour is not None and ctx.commands_last_hour >= ctx.commands_per_hour:
        return Refusal(
            RefusalCode.BUDGET,
            f"{_name(command)}: @{ctx.actor.login} has run {ctx.commands_last_hour} commands here "
            f"in the last hour; the limit is {ctx.commands_per_hour}.",
            "Wait a while, or ask a maintainer to raise limits.commands_per_hour.",
        )
    if isinstance(command, Draft) and command.via_label:
        return _draft_by_label(ticket, ctx)
    if ctx.on_pull_request and (not ticket.exists or command.name is CommandName.DRAFT):
        return Refusal(
            RefusalCode.NOT_A_TICKET,
            f"{_name(command)}: comments on pull requests never create tickets.",
            f"Write /{command.name.value} on the issue itself.",
        )
    variant = command.mode if isinstance(command, Accept) else None
    rows = rows_for(command.name, variant)
    if not ticket.exists and not any(None in row.sources for row in rows):
        return Refusal(
            RefusalCode.NOT_A_TICKET,
            f"{_name(command)}: this issue is not a ticket.",
            "A requester or task owner can make it one with /draft or /publish.",
        )
    row = next((r for r in rows if ticket.work in r.sources), None)
    if row is None:
        return _wrong_state(ticket, command, rows)
    if row.target in row.sources and _standing_of(ticket, ctx).valid:
        return _wrong_state(ticket, command, rows)  # a renewal row: only for one that lapsed
    used = next((q for q in row.allowed if holds(ticket, ctx, q)), None)
    if used is None:
        who = " or ".join(q.value for q in row.allowed)
        return Refusal(
            RefusalCode.NOT_ALLOWED,
            f"{_name(command)} on a {ticket.work or 'new'} ticket needs {who}; "
            f"@{ctx.actor.login} holds none of them.",
            f"Ask someone who is {who}.",
        )
    if row.backed_by is not None and isinstance(used, Relation) and row.backed_by not in ctx.actor.roles:
        return Refusal(
            RefusalCode.NOT_ALLOWED,
            f"{_name(command)}: @{ctx.actor.login} is the {used.value} but no longer holds "
            f"{row.backed_by.value}, which the {used.value} needs now.",
            f"Ask to be given {row.backed_by.value} again, or /reopen to give the work up.",
        )
    return _GUARDS[command.name](ticket, command, ctx, row, used)


def _wrong_state(ticket: Ticket, command: Command, rows: tuple[Transition, ...]) -> Refusal:
    if ticket.exists and command.name is CommandName.DRAFT:
        return Refusal(
            RefusalCode.ALREADY_A_TICKET,
            f"/draft: this issue is already a ticket ({ticket.work}).",
            "Use /status to see where it stands.",
        )
    if ticket.work is WorkState.ACCEPTED and command.name is CommandName.ACCEPT:
        return Refusal(
            RefusalCode.WRONG_STATE,
            f"{_name(command)}: the ticket is accepted and its acceptance still holds; only an "
            "acceptance that no longer holds (expired, or its reviewer's role gone) is renewed.",
            "Use /status to see what can happen next and who can do it.",
        )
    wanted = sorted({s.value for r in rows for s in r.sources if s is not None and s is not r.target})
    return Refusal(
        RefusalCode.WRONG_STATE,
        f"{_name(command)} needs the ticket to be {' or '.join(wanted) or 'new'}; it is {ticket.work}.",
        "Use /status to see what can happen next and who can do it.",
    )


def _event(
    kind: EventType,
    ctx: Context,
    used: Qualification | None,
    data: Mapping[str, Any],
    role: str | None = None,
) -> Event:
    role = used.value if used is not None else role
    if ctx.via is not None:
        data = _by_way_of(data, ctx.via)
    return Event(
        kind, ctx.actor.login, role, ctx.at, ctx.operation_id, ctx.policy_version, data, ctx.actor.id
    )


def _by_way_of(data: Mapping[str, Any], via: str) -> dict[str, Any]:
    """The event's data with `via` (how the command came: "api"); a creation's own `via` (draft,
    publish) is kept as `origin`."""
    marked = dict(data)
    if "via" in marked:
        marked["origin"] = marked["via"]
    marked["via"] = via
    return marked


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def _missing(command: Command, what: str, example: str) -> Refusal:
    return Refusal(
        RefusalCode.MISSING_TEXT,
        f"{_name(command)} needs {what}.",
        f"Write it after the command, for example: {example}",
    )


Guard = Callable[[Ticket, Any, Context, Transition, Qualification], Decision]


def _draft(ticket: Ticket, command: Draft, ctx: Context, row: Transition, used: Qualification) -> Decision:
    data = {"via": "draft", "environments": list(ctx.environments)}
    return (_event(EventType.CREATED, ctx, used, data),)


LABEL = "ticket_label"
"""The "role" recorded when the configured ticket label, not a person's role, created the ticket."""


def _draft_by_label(ticket: Ticket, ctx: Context) -> Decision:
    """Labelling an issue with the ticket label makes it a draft ticket, once; later labels change nothing."""
    if ticket.exists:
        return ()
    data = {"via": "label", "environments": list(ctx.environments)}
    event = Event(
        EventType.CREATED,
        ctx.actor.login,
        LABEL,
        ctx.at,
        ctx.operation_id,
        ctx.policy_version,
        data,
        ctx.actor.id,
    )
    return (event,)


def _publish(
    ticket: Ticket, command: Publish, ctx: Context, row: Transition, used: Qualification
) -> Decision:
    if not command.description.strip():
        return Refusal(
            RefusalCode.MISSING_DESCRIPTION,
            "/publish needs a description: the issue body is empty.",
            "Describe the work in the issue body, then /publish again.",
        )
    events: list[Event] = []
    if not ticket.exists:
        created = {"via": "publish", "environments": list(ctx.environments)}
        events.append(_event(EventType.CREATED, ctx, used, created))
    if command.first_assignee is not None:
        owner, owner_id = command.first_assignee, command.first_assignee_id
    else:
        owner, owner_id = ctx.actor.login, ctx.actor.id
    published: dict[str, Any] = {"owner": owner, "owner_id": owner_id, "no_code": command.no_code}
    if ctx.description_digest is not None:
        published["description_digest"] = ctx.description_digest
    events.append(_event(EventType.PUBLISHED, ctx, used, published))
    return tuple(events)


def _claim(ticket: Ticket, command: Claim, ctx: Context, row: Transition, used: Qualification) -> Decision:
    minutes = command.check_in_minutes
    if minutes is not None and not 1 <= minutes <= MAX_CHECK_IN_MINUTES:
        return Refusal(
            RefusalCode.INVALID_ARGUMENT,
            f"/claim --check-in takes whole minutes from 1 to {MAX_CHECK_IN_MINUTES}, not {minutes}.",
            "For example: /claim --check-in 60",
        )
    data = {
        "attempt": ticket.attempt + 1,
        "check_in_minutes": command.check_in_minutes,
        "branch": command.branch,
    }
    return (_event(EventType.CLAIMED, ctx, used, data),)


def _deliver(
    ticket: Ticket, command: Deliver, ctx: Context, row: Transition, used: Qualification
) -> Decision:
    if not command.summary.strip():
        return _missing(command, "a summary of the work", "/deliver Added retries to the uploader.")
    if ticket.no_code and not command.artifacts:
        return Refusal(
            RefusalCode.MISSING_ARTIFACT,
            "/deliver on a no-code ticket needs an artifact=URL.",
            "For example: /deliver artifact=https://example.com/report Summary of the work.",
        )
    if not command.has_artifact:
        return Refusal(
            RefusalCode.MISSING_ARTIFACT,
            "/deliver needs at least one artifact: branch=NAME, commit=SHA, a linked PR or artifact=URL.",
            "For example: /deliver branch=agent/12-fix Fixed the parser.",
        )
    previous = ticket.last_delivery
    if previous is not None and previous.same_work_as(command.commit, command.artifacts):
        return Refusal(
            RefusalCode.NO_PROGRESS,
            f"/deliver: commit {command.commit or '(none)'} and the artifacts are the same as "
            f"attempt {previous.attempt}'s delivery; a new summary alone is not progress.",
            "Push new work (or name a new artifact), then /deliver again.",
        )
    attempt = ticket.attempt + 1 if ticket.work is WorkState.ACCEPTED else ticket.attempt
    data = {
        "attempt": attempt,
        "summary": command.summary.strip(),
        "branch": command.branch,
        "commit": command.commit,
        "pull_request": command.pull_request,
        "artifacts": list(command.artifacts),
        "tree": command.tree,
        "comment_id": ctx.comment_id,
        "comment_at": _iso(ctx.comment_at),
    }
    return (_event(EventType.DELIVERED, ctx, used, data),)


def _accept(ticket: Ticket, command: Accept, ctx: Context, row: Transition, used: Qualification) -> Decision:
    delivery = ticket.current_delivery
    assert delivery is not None  # a delivered or accepted ticket always has its delivery
    if ctx.actor_is_agent and not ctx.agents_may_accept:
        return Refusal(
            RefusalCode.AGENTS_CANNOT_ACCEPT,
            f"{_name(command)}: @{ctx.actor.login} is an agent (a bot, or listed under agents:) "
            "and agents never accept work, their own or another's.",
            "Ask a person who is a reviewer to /accept.",
        )
    renewing = _standing_of(ticket, ctx) if ticket.work is WorkState.ACCEPTED else None
    stale = stale_decision(ticket, command, ctx)
    if stale is not None:
        return stale
    is_runner = _is_runner(ticket, delivery, ctx)
    refusal = _accept_refusal(command, ctx, is_runner)
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


def _standing_of(ticket: Ticket, ctx: Context) -> Validity:
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


def _is_runner(ticket: Ticket, delivery: Delivery, ctx: Context) -> bool:
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


def _send_back(
    ticket: Ticket, command: SendBack, ctx: Context, row: Transition, used: Qualification
) -> Decision:
    delivery = ticket.current_delivery
    assert delivery is not None
    if not command.feedback.strip():
        return _missing(command, "feedback for the runner", "/send-back The tests still fail on Windows.")
    stale = stale_decision(ticket, command, ctx)
    if stale is not None:
        return stale
    if _is_runner(ticket, delivery, ctx):
        return Refusal(
            RefusalCode.NOT_INDEPENDENT,
            f"/send-back: @{ctx.actor.login} delivered this work and cannot review it.",
            "Ask another reviewer, or /reopen to give the work up.",
        )
    data = {
        "feedback": command.feedback.strip(),
        "attempt": ticket.attempt + 1,
        "previous_attempt": delivery.attempt,
        "runner": ticket.claimant,
        "runner_id": ticket.claimant_id,
    }
    return (_event(EventType.SENT_BACK, ctx, used, data),)


def _reopen(ticket: Ticket, command: Reopen, ctx: Context, row: Transition, used: Qualification) -> Decision:
    if Relation.CLAIMANT in row.allowed and holds(ticket, ctx, Relation.CLAIMANT):
        used = Relation.CLAIMANT  # giving the work up: recorded as the claimant, whatever else they hold
    if not command.reason.strip():
        return _missing(command, "a reason", "/reopen The approach does not scale; needs a rethink.")
    data = {
        "reason": command.reason.strip(),
        "from": ticket.work.value if ticket.work else None,
        "released_by_claimant": used is Relation.CLAIMANT,
        "previous_claimant": ticket.claimant,
        "previous_claimant_id": ticket.claimant_id,
    }
    return (_event(EventType.REOPENED, ctx, used, data),)


_GUARDS: dict[CommandName, Guard] = {
    CommandName.DRAFT: _draft,
    CommandName.PUBLISH: _publish,
    CommandName.CLAIM: _claim,
    CommandName.DELIVER: _deliver,
    CommandName.ACCEPT: _accept,
    CommandName.SEND_BACK: _send_back,
    CommandName.REOPEN: _reopen,
}


def observe(
    ticket: Ticket, observation: Observation, ctx: ObservationContext
) -> tuple[RailEvent, ...] | Refusal:
    """Rail events for an observation about a ticket; never a WorkState change."""
    if not ticket.exists:
        return Refusal(RefusalCode.NOT_A_TICKET, f"{ticket.key} is not a ticket.")
    return decide_observation(ticket.rails, observation, ctx)
