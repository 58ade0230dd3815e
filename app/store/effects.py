"""Intended GitHub writes (effects), stored in the transaction of the change that needs them.

`app.runtime.outbox` performs them later; see there for leases, coalescing and retries.
"""

from __future__ import annotations

import contextvars
import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from sqlalchemy import Connection, bindparam, case, func, select, update

from app.contracts.effect_types import Effect, EffectKind, assign, comment, marker, reaction, rerun
from app.contracts.traces import traceparent
from app.store.database import Database, dialect_insert, dialect_later
from app.store.installations import installations
from app.store.tables import OutboxEffectRow, RepositoryRow, table

effects_table = table(OutboxEffectRow)
_repositories = table(RepositoryRow)
__all__ = ["Effect", "EffectKind", "assign", "comment", "marker", "reaction", "rerun"]
PENDING, DONE, FAILED, CANCELLED = "pending", "done", "failed", "cancelled"
_ENQUEUED: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar(
    "railyard_enqueued", default=None
)


def watch_enqueued() -> list[bool]:
    """From now on in this context (and the threads a unit of work copies it to), `enqueue`
    marks the list it returns: the worker tells its outbox only after a delivery that
    enqueued something, so an event that changed nothing costs the outbox no look."""
    enqueued = [False]
    _ENQUEUED.set(enqueued)
    return enqueued


MIN_SURFACE_INTERVAL = 1.0
"""Seconds between two writes of one surface (a status comment, a check-run), by default: the
outbox that writes one records when it may be written again (`EffectLeases`)."""


def enqueue(connection: Connection, effects: Sequence[Effect], now: float) -> None:
    """Record effects in the caller's transaction (so they commit, or not, with the change),
    each with the id of the repository its name belongs to in that transaction (`repositories`):
    the outbox writes it only while GitHub's repository of that id still has the name."""
    if not effects:
        return
    if (enqueued := _ENQUEUED.get()) is not None:
        enqueued[0] = True
    keep, replace = _enqueue_statements(connection.dialect.name)
    parent = traceparent()
    for effect in effects:
        row = {
            "dedupe_key": effect.dedupe_key,
            "installation_id": effect.installation_id,
            "repository": effect.repository,
            "b_named": effect.repository.casefold(),
            "kind": str(effect.kind),
            "payload": dict(effect.payload),
            "status": PENDING,
            "attempts": 0,
            "claims": 0,
            "ambiguous": False,
            "next_attempt_at": now,
            "created_at": now,
            "updated_at": now,
            "traceparent": parent,
        }
        connection.execute(replace if effect.coalesce else keep, row)


@functools.cache
def _enqueue_statements(dialect: str) -> tuple[Any, Any]:
    """The two INSERTs `enqueue` runs, built once per dialect: building one for every effect
    cost more CPU than running it (`docs/benchmarks.md`). The first keeps an effect already
    recorded; the second, for a surface (`coalesce`), replaces its payload, and re-arms it
    no sooner than its row's `next_attempt_at`: after a write, the write's time plus the
    outbox's surface interval (`EffectLeases.done`); a surface cancelled while it waited keeps
    its wait; a failed one's last attempt is past. Both take the repository's id from
    `repositories` by name in the same statement (no round trip of its own)."""
    named = _repositories.c.full_name == bindparam("b_named")
    statement = dialect_insert(dialect)(effects_table).values(
        repository_id=select(_repositories.c.id).where(named).scalar_subquery()
    )
    later = dialect_later(dialect)
    current = effects_table.c
    was_pending = current.status == PENDING
    replace = statement.on_conflict_do_update(
        index_elements=["dedupe_key"],
        set_={
            "payload": statement.excluded.payload,
            "updated_at": statement.excluded.updated_at,
            "traceparent": statement.excluded.traceparent,
            "repository_id": func.coalesce(statement.excluded.repository_id, current.repository_id),
            "status": PENDING,
            "attempts": case((was_pending, current.attempts), else_=0),
            "claims": case((was_pending, current.claims), else_=0),
            "next_attempt_at": case(
                (was_pending, current.next_attempt_at),
                else_=later(statement.excluded.next_attempt_at, current.next_attempt_at),
            ),
        },
    )
    return statement.on_conflict_do_nothing(index_elements=["dedupe_key"]), replace


def effect_counts(database: Database) -> dict[str, int]:
    """How many effects are pending, done and failed."""
    with database.read() as connection:
        rows = connection.execute(
            select(effects_table.c.status, func.count()).group_by(effects_table.c.status)
        )
        return {status: int(count) for status, count in rows}


def release_effect_leases(database: Database) -> int:
    """Free every pending effect's lease (a single-process SQLite server at start: their holders are gone).

    An effect whose create may have left before the crash is marked ambiguous already, so
    the next attempt looks for what GitHub created before it writes.
    """
    with database.write() as connection:
        return int(
            connection.execute(
                update(effects_table)
                .where(effects_table.c.status == PENDING, effects_table.c.lease_until.is_not(None))
                .values(lease_until=None, lease_owner=None)
            ).rowcount
        )


def effect_result(connection: Connection, dedupe_key: str) -> dict[str, Any] | None:
    """What GitHub answered for an effect (the status comment's address, say), once performed."""
    statement = select(effects_table.c.result).where(effects_table.c.dedupe_key == dedupe_key)
    result = connection.execute(statement).scalar()
    return dict(result) if result else None


def write_unverified_again(database: Database, effects: Sequence[Effect], now: float) -> list[str]:
    """Enqueue again those of `effects` (surfaces) whose last write said it could not verify a
    reviewer's role (the renderer's `unverified` note in its result) and that are not waiting to
    be written already; their dedupe keys."""
    if not effects:
        return []
    keys = [effect.dedupe_key for effect in effects]
    found = select(effects_table.c.dedupe_key, effects_table.c.result).where(
        effects_table.c.dedupe_key.in_(keys), effects_table.c.status == DONE
    )
    with database.write() as connection:
        noted = {key for key, result in connection.execute(found) if _noted_unverified(result)}
        again = [effect for effect in effects if effect.dedupe_key in noted]
        enqueue(connection, again, now)
    return [effect.dedupe_key for effect in again]


ASSIGNMENTS = (EffectKind.ASSIGN.value, EffectKind.UNASSIGN.value)


def assignment_ahead(database: Database, row: Mapping[str, Any]) -> float | None:
    """When an assignment (`assign`/`unassign`) enqueued before `row`'s for the same issue is due,
    while one is still pending (in backoff, say): `row`'s waits for it, so GitHub ends with the
    assignees the latest change wanted (a claim given up while its assignment was failing leaves
    nobody assigned). None when none is ahead of it."""
    same = (  # the same repository: by GitHub's id when the effect has one, else by its name
        effects_table.c.repository_id == row["repository_id"]
        if row.get("repository_id") is not None
        else effects_table.c.repository == row["repository"]
    )
    ahead = select(effects_table.c.next_attempt_at, effects_table.c.payload).where(
        effects_table.c.status == PENDING,
        effects_table.c.kind.in_(ASSIGNMENTS),
        same,
        effects_table.c.id < row["id"],
    )
    number = (row["payload"] or {}).get("number")
    with database.read() as connection:
        due = [at for at, payload in connection.execute(ahead) if (payload or {}).get("number") == number]
    return max(due) if due else None


def _noted_unverified(result: Any) -> bool:
    notes = result.get("notes") if isinstance(result, dict) else None
    return isinstance(notes, dict) and notes.get("unverified") is True


class Hold(NamedTuple):
    """An effect as it stands when its write is about to leave (`EffectLeases.hold_to_perform`):
    its installation's status (`active`/`suspended`/`deleted`/None), the name and key it has
    now (a rename moves both), and the id of the repository that name belongs to now."""

    installation_status: str | None
    repository: str
    dedupe_key: str
    holder: int | None
    claims: int
    """Its writes begun with no outcome recorded since the last one, this one included."""


class EffectLeases:
    """One outbox's leases on due effects: claim, renew, finish (several outboxes share the table).

    Each change is one statement committed by itself (`Database.write_here`): on PostgreSQL
    on the event loop, with no thread, on SQLite on a thread. Written in SQL both databases
    read, JSON cast for PostgreSQL.
    """

    def __init__(
        self,
        database: Database,
        owner: str,
        lease_seconds: float,
        surface_interval: float = MIN_SURFACE_INTERVAL,
    ) -> None:
        self.database, self.owner = database, owner
        self.lease_seconds, self.surface_interval = lease_seconds, surface_interval
        self._json = "?" if database.is_sqlite else "CAST(? AS json)"
        # SQLite has one writer. PostgreSQL: ANY(ARRAY(...)) runs the locking subquery once,
        # where IN (...) may run it again for each row of a semi-join (and lease past `limit`).
        due = "IN ({due})" if database.is_sqlite else "= ANY(ARRAY({due} FOR UPDATE SKIP LOCKED))"
        self._claim_due = _CLAIM_DUE.format(due=due.format(due=_DUE))

    async def claim_due(self, now: float, limit: int) -> list[dict[str, Any]]:
        """Lease up to `limit` effects due at `now`, oldest first: chosen and leased by one
        UPDATE, which on PostgreSQL passes over those another outbox is leasing (SKIP LOCKED),
        and they come back from it."""
        leased = (now + self.lease_seconds, self.owner, now, now, limit)
        rows = [_decoded(values) for values in await self.database.write_here(self._claim_due, leased)]
        return sorted(rows, key=lambda r: (r["next_attempt_at"], r["id"]))

    async def hold(self, row: dict[str, Any], now: float, **values: Any) -> bool:
        """Renew the lease on the effect (setting `values`); False if another outbox has it now."""
        sets, parameters = self._sets({"lease_until": now + self.lease_seconds, **values})
        live = f"{sets} WHERE id = ? AND lease_owner = ? AND lease_until >= ? RETURNING id"
        return bool(await self.database.write_here(_UPDATE + live, (*parameters, row["id"], self.owner, now)))

    async def hold_to_perform(self, row: dict[str, Any], now: float) -> Hold | None:
        """Renew the lease before the write leaves, and read what the write depends on, in one
        statement (`Hold`); None when this outbox holds it no more, or it is pending no more
        (cancelled meanwhile: its repository's name was reused). The write begun counts in
        `claims` until an outcome is recorded (`done`, `finish`), so one whose process died or
        whose lease ran out stays counted; a claimed effect never reached (its batch cut short)
        is not."""
        renewal = (now + self.lease_seconds, row["id"], self.owner, now, row["installation_id"])
        held = await self.database.write_here(_RENEW_READING_STATUS, renewal)
        return Hold(*held[0]) if held else None

    async def renew(self, ids: Sequence[int], now: float) -> int:
        """Renew this outbox's live leases among `ids` (a batch still being performed); how many it holds."""
        if not ids:
            return 0
        marks = ", ".join("?" * len(ids))
        live = f"lease_until = ? WHERE id IN ({marks}) AND lease_owner = ? AND lease_until >= ? RETURNING id"
        parameters = (now + self.lease_seconds, *ids, self.owner, now)
        return len(await self.database.write_here(_UPDATE + live, parameters))

    async def done(self, row: dict[str, Any], result: dict[str, Any] | None, now: float) -> None:
        """Record a performed write; a surface enqueued again while it was written (its
        `updated_at` moved) stays pending. Either way the row's `next_attempt_at` becomes the
        earliest time the surface may be written again (`surface_interval` after this write),
        which `enqueue` keeps to when it re-arms a done surface. One statement: which of the
        two it is, is decided under the row's lock."""
        unchanged, again = row["updated_at"], now + self.surface_interval
        # A result of None is stored as JSON null, which reads back as None like SQL NULL.
        parameters = (
            *(unchanged, unchanged, row["attempts"] + 1, again, unchanged, now),
            *(False, now, json.dumps(result), row["id"], self.owner),
        )
        await self.database.write_here(_DONE.format(json=self._json), parameters)

    async def finish(self, row: dict[str, Any], now: float, **values: Any) -> None:
        """Release the lease, setting `values` (a retry time, a failure, a cancellation): an
        outcome, so the claims that ended with none are counted afresh."""
        sets, parameters = self._sets({"lease_until": None, "updated_at": now, "claims": 0, **values})
        mine = f"{sets} WHERE id = ? AND lease_owner = ?"
        await self.database.write_here(_UPDATE + mine, (*parameters, row["id"], self.owner))

    def _sets(self, values: dict[str, Any]) -> tuple[str, tuple[Any, ...]]:
        """`values` as an UPDATE's SET list (columns only) and its parameters."""
        _columns_only(values)
        sets = ", ".join(f"{name} = {self._json if name in _JSON_COLUMNS else '?'}" for name in values)
        encoded = (json.dumps(v) if name in _JSON_COLUMNS else v for name, v in values.items())
        return sets, tuple(encoded)


_COLUMNS = tuple(effects_table.c.keys())
_JSON_COLUMNS = frozenset({"payload", "result"})
_UPDATE = f"UPDATE {effects_table.name} SET "  # noqa: S608 - constants, and columns checked
_DUE = (
    f"SELECT id FROM {effects_table.name} WHERE status = '{PENDING}' AND next_attempt_at <= ? "  # noqa: S608
    "AND (lease_until IS NULL OR lease_until < ?) ORDER BY next_attempt_at, id LIMIT ?"
)
_CLAIM_DUE = (
    f"UPDATE {effects_table.name} SET lease_until = ?, lease_owner = ? WHERE id {{due}} "  # noqa: S608
    f"RETURNING {', '.join(_COLUMNS)}"
)
_RENEW_READING_STATUS = (
    f"UPDATE {effects_table.name} SET lease_until = ?, claims = claims + 1 "  # noqa: S608
    f"WHERE id = ? AND lease_owner = ? AND lease_until >= ? AND status = '{PENDING}' "
    f"RETURNING (SELECT status FROM {installations.name} WHERE id = ?), repository, dedupe_key, "
    f"(SELECT id FROM {_repositories.name} WHERE full_name = lower({effects_table.name}.repository)), claims"
)
_DONE = (
    f"UPDATE {effects_table.name} SET "  # noqa: S608
    f"status = CASE WHEN updated_at = ? THEN '{DONE}' ELSE '{PENDING}' END, "
    "attempts = CASE WHEN updated_at = ? THEN ? ELSE 0 END, "
    "next_attempt_at = ?, claims = 0, "
    "updated_at = CASE WHEN updated_at = ? THEN ? ELSE updated_at END, "
    "lease_until = NULL, ambiguous = ?, done_at = ?, result = {json} "
    "WHERE id = ? AND lease_owner = ?"
)


def _decoded(values: Sequence[Any]) -> dict[str, Any]:
    """An effect's row as the store gives it: JSON decoded (SQLite keeps text), flags as bools."""
    row = dict(zip(_COLUMNS, values, strict=True))
    for name in _JSON_COLUMNS:
        if isinstance(row[name], str):
            row[name] = json.loads(row[name])
    row["ambiguous"] = bool(row["ambiguous"])
    return row


def _columns_only(values: dict[str, Any]) -> None:
    """Refuse names that are not columns: a prebuilt UPDATE would skip them without a word."""
    if unknown := values.keys() - effects_table.c.keys():
        raise ValueError(f"not columns of outbox_effects: {sorted(unknown)}")


LISTED = ("id", "kind", "repository", "status", "attempts", "next_attempt_at", "last_error", "created_at")
RETRYABLE = (FAILED, CANCELLED)


def list_effects(database: Database, status: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
    """Stored effects, newest first, optionally of one status (what `railyard effects` shows)."""
    columns = [effects_table.c[name] for name in LISTED]
    statement = select(*columns).order_by(effects_table.c.id.desc()).limit(limit)
    if status is not None:
        statement = statement.where(effects_table.c.status == status)
    with database.read() as connection:
        return [dict(row) for row in connection.execute(statement).mappings()]


def retry_effects(database: Database, ids: Sequence[int], now: float) -> dict[int, str | None]:
    """Put failed or cancelled effects back to pending, due now, attempts and claims reset.

    Answers each id's status before the call (None: no such effect); only the ones that were
    failed or cancelled changed. An ambiguous effect stays ambiguous, so its next attempt
    still looks for what an earlier attempt created before it writes.
    """
    with database.write() as connection:
        rows = connection.execute(
            select(effects_table.c.id, effects_table.c.status).where(effects_table.c.id.in_(list(ids)))
        )
        found: dict[int, str | None] = {int(row.id): row.status for row in rows}
        connection.execute(
            update(effects_table)
            .where(effects_table.c.id.in_(list(ids)), effects_table.c.status.in_(RETRYABLE))
            .values(
                status=PENDING,
                attempts=0,
                claims=0,
                next_attempt_at=now,
                lease_until=None,
                lease_owner=None,
                updated_at=now,
            )
        )
    return {effect_id: found.get(effect_id) for effect_id in ids}


def retry_waiting_effects(database: Database, now: float) -> list[int]:
    """Make every pending effect waiting for its next try due now (once an outage is over); their ids.

    Tries already counted stay counted; an effect a worker holds is left to it, and an
    ambiguous one still looks for what an earlier try created before it writes.
    """
    with database.write() as connection:
        rows = connection.execute(
            update(effects_table)
            .where(
                effects_table.c.status == PENDING,
                effects_table.c.next_attempt_at > now,
                effects_table.c.lease_until.is_(None),
                effects_table.c.attempts > 0,
            )
            .values(next_attempt_at=now, updated_at=now)
            .returning(effects_table.c.id)
        )
        return sorted(int(row.id) for row in rows)
