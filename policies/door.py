"""The pure parts of the one door (`app.store.tickets.execute_in`): which decision a change
gets, how its operation is named, which events open an attempt, the stored spelling of a
key. The store and the in-memory fake both take them from here.
"""

from __future__ import annotations

from policies.commands import Command, Context
from policies.engine import decide, observe
from policies.events import Event, EventType
from policies.model import Ticket, TicketKey
from policies.notices import NOTICES, Notice, NoticeContext, decide_notice, notice_name
from policies.rails import OBSERVATIONS, Observation, ObservationContext, observation_to_data
from policies.refusals import Refusal

Change = Command | Observation | Notice
"""What can change a ticket: a person's command, an observation of GitHub, a notice."""
ChangeContext = Context | ObservationContext | NoticeContext
"""Who and when, for each kind of change."""

# The events that open a new attempt (their data carries the attempt number).
OPENS_ATTEMPT = frozenset({EventType.CLAIMED, EventType.SENT_BACK, EventType.DELIVERED})


def normalize_key(key: TicketKey) -> TicketKey:
    """Repository names are case-insensitive on GitHub; store one spelling."""
    return TicketKey(key.repository.casefold(), key.number)


API_OPERATION = "api:"
"""The prefix of an API request's operation id (`handlers.api.ApiCommand.operation_id`)."""


def spells_no_repository(operation_id: str) -> bool:
    """Whether the operation id is the caller's own key (an API request's Idempotency-Key, scoped
    to the account), naming no repository: found on another ticket, it is that key reused (the
    API's 422), never a name reused by another repository, so it is never qualified and applied
    again under an id of that ticket's own (`operation_rows.own_operation_id`)."""
    return operation_id.startswith(API_OPERATION)


def same_ticket(
    stored: TicketKey,
    stored_ticket: int | None,
    stored_repository: int | None,
    key: TicketKey,
    ticket_id: int | None,
    repository_id: int | None,
) -> bool:
    """Whether a stored operation (at `stored`, on the ticket row `stored_ticket`, in GitHub's
    repository `stored_repository`) is the ticket at `key`'s (its row `ticket_id`, in the
    repository `repository_id` the records give its name now).

    By the row when the operation has one: a rename moves the row, never the operation's name.
    A refusal stored before any row: the same number in the same repository, compared by GitHub's
    id when both sides have one (the name may have been renamed away, or taken by another
    repository since), by name only when one side has none (stored before ids were kept, or a
    repository railyard never identified)."""
    if stored_ticket is not None:
        return stored_ticket == ticket_id
    if stored.number != key.number:
        return False
    if stored_repository is not None and repository_id is not None:
        return stored_repository == repository_id
    return stored.repository.casefold() == key.repository.casefold()


def decide_change(ticket: Ticket, change: Change, context: ChangeContext) -> tuple[Event, ...] | Refusal:
    """The core's decision for a command, an observation or a notice."""
    if isinstance(change, OBSERVATIONS) and isinstance(context, ObservationContext):
        return observe(ticket, change, context)
    if isinstance(change, NOTICES) and isinstance(context, NoticeContext):
        return decide_notice(ticket, change, context)
    if not isinstance(change, OBSERVATIONS + NOTICES) and isinstance(context, Context):
        return decide(ticket, change, context)
    raise TypeError(f"{type(change).__name__} cannot run with {type(context).__name__}")


def change_name(change: Change) -> str:
    """How an operation names its change: `/claim`, `observation:branch`, a notice's name."""
    if isinstance(change, OBSERVATIONS):
        return f"observation:{observation_to_data(change)['kind']}"
    if isinstance(change, NOTICES):
        return notice_name(change)
    return f"/{change.name.value}"
