r"""The audit chain (SPEC *Audit log*): each event's digest, and where a stored chain breaks.

An event's **canonical JSON** is the object with exactly these nine keys, sorted, written
compactly (no spaces: `","` and `":"` as separators), in UTF-8 with non-ASCII characters as they
are (not `\u` escapes):

    actor, actor_id, at, data, operation_id, policy_version, revision, role, type

`at` is the event's time in UTC as ISO-8601 with microseconds and a `Z`
(`2026-12-01T09:30:00.000000Z`); `actor_id` and `role` may be null; `data` is the event's data
object as stored (its keys sorted too, at every depth). Strings escape only what JSON requires
(`"`, `\`, characters below U+0020, with `\n` `\t` `\r` `\b` `\f` short) and U+007F as `\u007f`;
a number with no fraction below 10^16 is written as an integer (`1`, never `1.0`), other
numbers in Python's shortest round-trip form (`0.42`, `1e+20`). This is what `jq -cS` prints for
the same object, so an auditor can rebuild it from `railyard audit export` with
`jq -cS '{type,actor,actor_id,role,at,operation_id,policy_version,data,revision}'`.

An event's **digest** is the lowercase hex sha256 of the previous event's digest (of the same
ticket), a newline, and the event's canonical JSON. The first event of a ticket starts from the
ticket's **seed** `ticket:<id>`, `<id>` being the ticket's row id (`ticket_id` in the export):
the one name of a ticket that never changes (a repository's name can be renamed or reused).

railyard decides from the ticket's stored row (its snapshot and revision), not from its events.
So verify also replays each ticket's events (`policies.fold`, as the one door does) and names
the fields where the stored ticket differs from the replayed one (`ticket_differences`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

from policies.model import Ticket


@dataclass(frozen=True)
class AuditedEvent:
    """One stored event as the chain sees it: its fields, and the digest stored with it (None: missing)."""

    revision: int
    type: str
    actor: str
    actor_id: int | None
    role: str | None
    at: datetime
    operation_id: str
    policy_version: str
    data: Mapping[str, Any] = field(default_factory=dict)
    digest: str | None = None


def seed(ticket_id: int) -> str:
    """What the first event of the ticket with row id `ticket_id` chains from."""
    return f"ticket:{ticket_id}"


def utc_text(at: datetime) -> str:
    """`at` in UTC, ISO-8601 with microseconds and a `Z`; a naive time is taken as UTC."""
    moment = at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
    return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def canonical_json(event: AuditedEvent) -> bytes:
    """The event's canonical JSON (see the module's docstring), as UTF-8 bytes."""
    document = {
        "type": event.type,
        "actor": event.actor,
        "actor_id": event.actor_id,
        "role": event.role,
        "at": utc_text(event.at),
        "operation_id": event.operation_id,
        "policy_version": event.policy_version,
        "data": normal(event.data),
        "revision": event.revision,
    }
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.replace("\x7f", "\\u007f").encode("utf-8")


def normal(value: Any) -> Any:
    """`value` with every number written as `jq` writes it: `1.0` as `1` (below 10^16)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return int(value)
    if isinstance(value, Mapping):
        # Keys as JSON stores them: a number's key comes back as its text.
        return {key if isinstance(key, str) else json.dumps(key): normal(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [normal(item) for item in value]
    return value


def chain(previous: str, event: AuditedEvent) -> str:
    """The digest of `event`, which follows the digest (or seed) `previous`."""
    return hashlib.sha256(previous.encode("utf-8") + b"\n" + canonical_json(event)).hexdigest()


def first_break(ticket_id: int, events: Iterable[AuditedEvent], last_revision: int) -> int | None:
    """The first revision at which the ticket's stored chain does not hold, or None when it holds.

    `events` are the ticket's stored events in revision order; `last_revision` is the revision the
    ticket itself records. A revision breaks when its row is missing (deleted), when its stored
    digest is missing or differs from the one recomputed from its fields and the previous
    row's stored digest (edited, or inserted), or when it lies past the ticket's revision.
    """
    previous, expected = seed(ticket_id), 1
    for event in events:
        if event.revision != expected or event.revision > last_revision:
            return min(expected, event.revision)
        if event.digest is None or event.digest != chain(previous, event):
            return expected
        previous, expected = event.digest, expected + 1
    return expected if expected <= last_revision else None


def ticket_differences(stored: Ticket, replayed: Ticket) -> tuple[str, ...]:
    """The fields (a rail's as `rails.NAME`) where the stored ticket differs from the one its
    events replay to, in declaration order; empty when they agree. The key is not compared: no
    event names it."""
    differing: list[str] = []
    for name in (f.name for f in fields(Ticket) if f.name != "key"):
        mine, theirs = getattr(stored, name), getattr(replayed, name)
        if name == "rails":
            differing.extend(f"rails.{rail}" for rail in _differing_fields(mine, theirs))
        elif mine != theirs:
            differing.append(name)
    return tuple(differing)


def _differing_fields(mine: Any, theirs: Any) -> list[str]:
    return [f.name for f in fields(mine) if getattr(mine, f.name) != getattr(theirs, f.name)]


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(text: str) -> str:
    """`text` as a CSV cell no spreadsheet runs as a formula: one starting with `=`, `+`, `-`,
    `@`, a tab or a carriage return gets a leading `'` (OWASP's advice); others are unchanged."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text
