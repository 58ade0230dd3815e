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

from policies.clocks import whole_second
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
from policies.events import Event, EventType, RailEvent
from policies.fold import apply, apply_all
from policies.model import Delivery, Ticket
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


def _name(command: Command) -> str:
    if isinstance(command, Accept) and command.mode is not AcceptMode.REVIEW:
        return f"/accept --{command.mode.value}"
    return f"/{command.name.value}"


def _wrong_state(ticket: Ticket, command: Command, rows: tuple[Transition, ...]) -> Refusal:
    if ticket.exists and command.name is CommandName.DRAFT:
        return Refusal(
            RefusalCode.ALREADY_A_TICKET,
            f"/draft: this issue is already a ticket ({ticket.work}).",
            "Use /status to see where it stands.",
        )
    wanted = sorted({s.value for r in rows for s in r.sources if s is not None})
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
    published = {"owner": owner, "owner_id": owner_id, "no_code": command.no_code}
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
        "comment_id": ctx.comment_id,
        "comment_at": _iso(ctx.comment_at),
    }
    return (_event(EventType.DELIVERED, ctx, used, data),)


def decided_before_delivery(ctx: Context, delivery: Delivery) -> bool:
    """Whether the decision in `ctx` was written before `delivery` was, as far as can be known.

    The two times come from two clocks: a comment's `created_at` is GitHub's, in whole
    seconds, and comment ids rise in the order comments are written; an API request's time is
    railyard's, to the microsecond, and it has no comment id. So:

    - An API decision runs when it arrives, and the delivery it decides on was recorded before
      that: never stale.
    - A comment decision on a comment delivery: (created_at, id) against (created_at, id),
      exact, since ids order comments written in the same second.
    - A comment decision on an API delivery: a comment received before the delivery was
      recorded (both on railyard's clock) was written before it; otherwise its second against
      the delivery's second. In the delivery's own second, a comment received after the
      delivery cannot be placed (GitHub says nothing finer than the second, and the delivery
      has no id to order it by): it is taken as written after, so a review written after a
      delivery is never refused as stale.
    """
    if ctx.comment_id is None or ctx.comment_at is None or delivery.comment_at is None:
        return False
    if delivery.comment_id is not None:
        return (ctx.comment_at, ctx.comment_id) < (delivery.comment_at, delivery.comment_id)
    if ctx.received_at is not None and ctx.received_at < delivery.comment_at:
        return True
    return whole_second(ctx.comment_at) < whole_second(delivery.comment_at)


def _stale(ticket: Ticket, command: Command, ctx: Context) -> Refusal | None:
    """A decision written before the current delivery's `/deliver` looked at older work."""
    delivery = ticket.current_delivery
    if delivery is None or not decided_before_delivery(ctx, delivery):
        return None
    return Refusal(
        RefusalCode.STALE_DECISION,
        f"{_name(command)} was written before attempt {delivery.attempt}'s delivery; "
        "it refers to older work.",
        "Look at the current delivery, then comment again.",
    )


def _accept(ticket: Ticket, command: Accept, ctx: Context, row: Transition, used: Qualification) -> Decision:
    delivery = ticket.current_delivery
    assert delivery is not None  # a delivered ticket always has its delivery
    stale = _stale(ticket, command, ctx)
    if stale is not None:
        return stale
    is_runner = _is_runner(ticket, delivery, ctx)
    refusal = _accept_refusal(command, ctx, is_runner)
    if refusal is not None:
        return refusal
    kind = {
        AcceptMode.REVIEW: ReviewKind.INDEPENDENT,
        AcceptMode.SELF: ReviewKind.SELF_VERIFIED,
        AcceptMode.OVERRIDE: ReviewKind.OVERRIDE,
    }[command.mode]
    data = {
        "attempt": delivery.attempt,
        "commit": delivery.commit,
        "delivery_operation_id": delivery.operation_id,
        "review": kind.value,
        "reason": command.reason.strip() or None,
    }
    return (_event(EventType.ACCEPTED, ctx, used, data),)


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
    stale = _stale(ticket, command, ctx)
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
