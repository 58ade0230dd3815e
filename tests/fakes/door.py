"""The pure parts of the one door for the in-memory store: taken from `policies.door`, like the store."""

from __future__ import annotations

from handlers.ports import Outcome
from policies.commands import Context
from policies.door import (
    OPENS_ATTEMPT,
    ChangeContext,
    change_name,
    decide_change,
    same_ticket,
    spells_no_repository,
)
from policies.door import normalize_key as normalize
from policies.model import TicketKey
from policies.refusals import stale_revision


def stale(key: TicketKey, context: ChangeContext, expected: int, actual: int) -> Outcome:
    """`tickets._execute_once` on a stale revision: final (stored by the caller) for a command,
    transient for an observation."""
    refusal = stale_revision(str(key), expected, actual, final=isinstance(context, Context))
    return Outcome(context.operation_id, key, actual, refusal=refusal)


__all__ = [
    "OPENS_ATTEMPT",
    "change_name",
    "decide_change",
    "normalize",
    "same_ticket",
    "spells_no_repository",
    "stale",
]
