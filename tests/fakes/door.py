"""The pure parts of the one door (`app/store/tickets.py`), shared by the in-memory store."""

from __future__ import annotations

from handlers.ports import Change, ChangeContext, Outcome
from policies.commands import Context
from policies.engine import decide, observe
from policies.events import Event, EventType
from policies.model import Ticket, TicketKey
from policies.notices import NOTICES, NoticeContext, decide_notice, notice_name
from policies.rails import OBSERVATIONS, ObservationContext, observation_to_data
from policies.refusals import Refusal, stale_revision

# The events that open a new attempt (their data carries the attempt number), as `app.store.tickets`.
OPENS_ATTEMPT = frozenset({EventType.CLAIMED, EventType.SENT_BACK, EventType.DELIVERED})


def normalize(key: TicketKey) -> TicketKey:
    """Repository names are case-insensitive on GitHub; one spelling is stored (`normalize_key`)."""
    return TicketKey(key.repository.casefold(), key.number)


def stale(key: TicketKey, context: ChangeContext, expected: int, actual: int) -> Outcome:
    """`tickets._execute_once` on a stale revision: final (stored by the caller) for a command,
    transient for an observation."""
    refusal = stale_revision(str(key), expected, actual, final=isinstance(context, Context))
    return Outcome(context.operation_id, key, actual, refusal=refusal)


def decide_change(ticket: Ticket, change: Change, context: ChangeContext) -> tuple[Event, ...] | Refusal:
    """`tickets._decide`: the core's decision for a command, an observation or a notice."""
    if isinstance(change, OBSERVATIONS) and isinstance(context, ObservationContext):
        return observe(ticket, change, context)
    if isinstance(change, NOTICES) and isinstance(context, NoticeContext):
        return decide_notice(ticket, change, context)
    if not isinstance(change, OBSERVATIONS + NOTICES) and isinstance(context, Context):
        return decide(ticket, change, context)
    raise TypeError(f"{type(change).__name__} cannot run with {type(context).__name__}")


def change_name(change: Change) -> str:
    """`tickets._change_name`: `/claim`, `observation:branch`, a notice's name."""
    if isinstance(change, OBSERVATIONS):
        return f"observation:{observation_to_data(change)['kind']}"
    if isinstance(change, NOTICES):
        return notice_name(change)
    return f"/{change.name.value}"
