"""The engine: `decide(ticket, command, context)` and `apply(ticket, event)`.

`decide` checks the current state, the actor's role or relation and the row's guards,
and answers with events or a refusal; `apply` (in `policies.fold`, importable from here)
folds one event into the ticket. Together they are the whole work rail. Neither performs
I/O or reads a clock.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from policies.accepting import accept_guard, agent_refusal, is_runner, standing_of
from policies.commands import (
    MAX_CHECK_IN_MINUTES,
    Accept,
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
from policies.decisions import event_for as _event
from policies.decisions import iso as _iso
from policies.decisions import missing_text as _missing
from policies.decisions import stale_decision
from policies.events import Event, EventType, RailEvent
from policies.evidence import cost_of, evidence_to_data
from policies.fold import apply, apply_all
from policies.model import Ticket
from policies.rails import Observation, ObservationContext, decide_observation
from policies.refusals import Refusal, RefusalCode
from policies.states import (
    Qualification,
    Relation,
    Role,
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
    if isinstance(command, Accept) and (refusal := agent_refusal(command, ctx)) is not None:
        return refusal  # before the state and the roles: an agent never accepts, in any form
    row = next((r for r in rows if ticket.work in r.sources), None)
    if row is None:
        return _wrong_state(ticket, command, rows)
    if row.target in row.sources and standing_of(ticket, ctx).valid:
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
    if command.labels:
        published["labels"] = sorted(set(command.labels))
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
    limited = _attempt_limit(ticket, command, ctx)
    if limited is not None:
        return limited
    spent, budget = Decimal(ctx.runner_month_cost), ctx.cost_per_runner_month
    if budget is not None and spent >= Decimal(budget):
        return Refusal(
            RefusalCode.BUDGET_EXHAUSTED,
            f"/claim: @{ctx.actor.login}'s deliveries here cost ${spent} this month (UTC), as reported; "
            f"the limit is ${budget} (limits.cost_per_runner_month).",
            "Wait for next month, or ask a maintainer to raise limits.cost_per_runner_month.",
        )
    data = {
        "attempt": ticket.attempt + 1,
        "check_in_minutes": command.check_in_minutes,
        "branch": command.branch,
    }
    return (_event(EventType.CLAIMED, ctx, used, data),)


def _attempt_limit(ticket: Ticket, command: Command, ctx: Context) -> Refusal | None:
    """A `/claim`, `/send-back` or `/deliver` on accepted work that would open an attempt past
    `limits.attempts_per_ticket`."""
    limit = ctx.attempts_per_ticket
    since = ticket.reopened_at_attempt or 0  # a reopen by someone other than the claimant
    if limit is None or ticket.attempt + 1 - since <= limit:
        return None
    counted = f"{limit} since it was last reopened" if since else f"{limit}"
    return Refusal(
        RefusalCode.ATTEMPT_LIMIT,
        f"{_name(command)} would open attempt {ticket.attempt + 1}; this ticket may have at most "
        f"{counted} (limits.attempts_per_ticket).",
        "A reviewer or the ticket's owner can /reopen it with a rethink of the work (the count then "
        "starts afresh), or a maintainer can raise limits.attempts_per_ticket.",
    )


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
    repeated = _repeated_attempt(ticket, command)
    if repeated is not None:
        return Refusal(
            RefusalCode.NO_PROGRESS,
            f"/deliver: commit {command.commit or '(none)'} and the artifacts are the same as "
            f"attempt {repeated}'s delivery; a new summary alone is not progress, and going back "
            "to earlier work is a loop.",
            "Push new work (or name a new artifact), then /deliver again.",
        )
    if ticket.work is WorkState.ACCEPTED:  # a new attempt, held to the limit as a claim's is
        limited = _attempt_limit(ticket, command, ctx)
        if limited is not None:
            return limited
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
    if command.evidence is not None:
        data["evidence"] = evidence_to_data(command.evidence)
    events = [_event(EventType.DELIVERED, ctx, used, data)]
    total = Decimal(ticket.cost_usd) + cost_of(command.evidence)
    limit = ctx.cost_per_ticket
    if limit is not None and not ticket.over_budget and total > Decimal(limit):
        crossed = {"cost_usd": format(total, "f"), "limit_usd": limit, "attempt": attempt}
        events.append(
            Event(
                EventType.OVER_BUDGET, "railyard", None, ctx.at, ctx.operation_id, ctx.policy_version, crossed
            )
        )
    return tuple(events)


def _repeated_attempt(ticket: Ticket, command: Deliver) -> int | None:
    """The earliest attempt whose delivery had the same commit and artifacts (A, B, A is a loop)."""
    earlier = list(ticket.delivered_work)
    previous = ticket.last_delivery
    if previous is not None and not earlier:  # a ticket recorded before every delivery was kept
        earlier = [(previous.attempt, previous.commit, previous.artifacts)]
    wanted = set(command.artifacts)  # an artifact named twice is still the same work
    for attempt, commit, artifacts in earlier:
        if commit == command.commit and set(artifacts) == wanted:
            return attempt
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
    if is_runner(ticket, delivery, ctx):
        return Refusal(
            RefusalCode.NOT_INDEPENDENT,
            f"/send-back: @{ctx.actor.login} delivered this work and cannot review it.",
            "Ask another reviewer, or /reopen to give the work up.",
        )
    limited = _attempt_limit(ticket, command, ctx)
    if limited is not None:
        return limited
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
        # A person's rethink (not the claimant giving up, not an agent): attempt_limit counts afresh.
        "counts_afresh": used is not Relation.CLAIMANT and not ctx.actor_is_agent,
        "previous_claimant": ticket.claimant,
        "previous_claimant_id": ticket.claimant_id,
    }
    return (_event(EventType.REOPENED, ctx, used, data),)


_GUARDS: dict[CommandName, Guard] = {
    CommandName.DRAFT: _draft,
    CommandName.PUBLISH: _publish,
    CommandName.CLAIM: _claim,
    CommandName.DELIVER: _deliver,
    CommandName.ACCEPT: accept_guard,
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
