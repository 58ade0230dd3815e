"""Which repository a name belongs to (`repositories`), and moving records when that changes.

Every record railyard keeps is keyed by the repository's name (lowercase), and the name
belongs to GitHub's repository id kept here. `place(id, name)` makes `name` the id's name:

- the name held by another id (reused by a new repository) first sends that id's records to
  a name no GitHub repository can have, `owner/name@ID`, and cancels their pending writes, so
  nothing of the old repository is ever shown under the name or written into the new one;
- the id known under another name (renamed, transferred) moves every record to `name` (and,
  given the installation that sent the news, its tickets and writes to that installation); what
  was kept under `name` while no id held it (an installation's listing of a repository renamed
  away unseen, tickets from before ids) is retired first, row by row, so the move never meets
  a unique key;
- several ids at once (`place_all`: GitHub's names for a name passed on or swapped, asked by
  the outbox before a write): each steps aside to a name of its own first, writes kept, so none
  retires another's records;
- an id and a name seen for the first time adopt the tickets stored under the name before
  ids were kept (0014), except those created before the repository was (another repository's).

Tickets created later take the id from here (`tickets._save_ticket`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, Row, String, bindparam, case, cast, func, literal, select, update

from app.contracts.effect_types import with_earlier_key
from app.store.advisory import one_at_a_time
from app.store.database import Database, insert_for
from app.store.effects import CANCELLED, PENDING
from app.store.tables import (
    HeldObservationRow,
    InstallationRepositoryRow,
    OutboxEffectRow,
    PullRequestRow,
    ReplyRow,
    RepositoryRow,
    TicketRow,
    table,
)

repositories = table(RepositoryRow)
_tickets = table(TicketRow)
_outbox = table(OutboxEffectRow)
_pulls = table(PullRequestRow)
# Every table keyed by the repository's name, but history: webhook deliveries and the append-only
# operations (the database refuses to change them) keep the name they had then. An operation's
# outcome is found by its id, so a replay is still a replay under the new name.
_KEYED_BY_NAME = tuple(
    table(row)
    for row in (
        TicketRow,
        PullRequestRow,
        HeldObservationRow,
        InstallationRepositoryRow,
        ReplyRow,
        OutboxEffectRow,
    )
)
# Outbox keys that spell the name after the kind (a ticket's status comment, its project items,
# a PR's check, a reaction).
_NAMED_KEYS = ("status:", "projects:", "check:", "reaction:")
_SURFACES = ("status:", "projects:", "check:")
REUSED = "the repository's name now names another repository"
"""Why a pending write of a repository whose name was taken by another is cancelled."""


_NAME_OF = select(repositories.c.full_name).where(repositories.c.id == bindparam("b_id"))
NAME_OF = f"SELECT full_name FROM {repositories.name} WHERE id = ?"  # noqa: S608 - `_NAME_OF` for the driver
_ID_OF = select(repositories.c.id).where(repositories.c.full_name == bindparam("b_name"))


def repository_at(connection: Connection, repository_id: int) -> str | None:
    """The name the records of `repository_id` are kept under, if railyard knows the id."""
    found = connection.execute(_NAME_OF, {"b_id": repository_id}).scalar()
    return None if found is None else str(found)


def repository_named(connection: Connection, name: str) -> int | None:
    """The id of the repository whose records are kept under `name`, if any."""
    found = connection.execute(_ID_OF, {"b_name": name.casefold()}).scalar()
    return None if found is None else int(found)


def holds(database: Database, name: str, repository_id: int) -> bool:
    """Whether the records kept under `name` are GitHub's repository `repository_id`'s: what the
    pages and the API ask before they show anything of a repository (its name may be reused)."""
    return repository_id != 0 and holder_of(database, name) == repository_id


def holder_of(database: Database, name: str) -> int | None:
    """The id the records give `name` to now (`repository_named` in a read of its own)."""
    with database.read() as connection:
        return repository_named(connection, name)


def place_before_write(
    database: Database,
    repository_id: int,
    name: str,
    effect_id: int,
    now: float,
    holders: Mapping[int, str],
) -> tuple[str, str] | None:
    """GitHub says `repository_id` is called `name` now, asked before one of its writes (no
    webhook said so yet): place it, as the `renamed` webhook will; the effect's name and key
    after the move, or None if it is pending no more. `holders`: the names GitHub gives now to
    the ids that held the names taken (asked first): they move there, their writes kept
    (`place_all`). The effect follows its id even when `place` has nothing to move: enqueued
    under the old name while the rename committed (PostgreSQL), the move never saw it."""
    with database.write() as connection:
        place_all(connection, {**holders, repository_id: name}, now)
        _follow_id(connection, effect_id, repository_id, now)
        found = connection.execute(
            select(_outbox.c.repository, _outbox.c.dedupe_key).where(
                _outbox.c.id == effect_id, _outbox.c.status == PENDING
            )
        ).first()
    return None if found is None else (str(found.repository), str(found.dedupe_key))


def place_all(connection: Connection, names: Mapping[int, str], now: float) -> None:
    """GitHub's names now for several ids (names swapped or passed along): each id whose
    records are under another name first steps aside to a name of its own, writes kept, so no
    id of `names` retires another's records; then each is placed (`place`)."""
    _one_placement_at_a_time(connection)
    for repository_id, name in names.items():
        current = repository_at(connection, repository_id)
        if current is not None and current != name.casefold():
            aside = f"{current}@moving-{repository_id}"
            _move(connection, current, aside, cancel=False)
            _rename(connection, repository_id, aside, now)
    for repository_id, name in names.items():
        place(connection, repository_id, name, None, now)


def _follow_id(connection: Connection, effect_id: int, repository_id: int, now: float) -> None:
    """The pending effect `effect_id` of `repository_id`, still under a name the id no longer
    has, moves (and is rekeyed) to the id's name; if the id's name already keeps an effect of
    that key (a surface the move brought), that one is written instead, with this payload."""
    effect = connection.execute(select(_outbox).where(_outbox.c.id == effect_id)).first()
    name = repository_at(connection, repository_id)
    if effect is None or effect.status != PENDING or name is None or effect.repository.casefold() == name:
        return
    key = _renamed_key(effect.dedupe_key, effect.repository.casefold(), name)
    twin = connection.execute(
        select(_outbox.c.id).where(_outbox.c.dedupe_key == key, _outbox.c.id != effect_id)
    ).scalar()
    if twin is None:
        moved = {"repository": name, "dedupe_key": key}
        connection.execute(update(_outbox).where(_outbox.c.id == effect_id).values(**moved))
        return
    connection.execute(
        update(_outbox)
        .where(_outbox.c.id == effect_id)
        .values(status=CANCELLED, last_error=f"written as effect {twin}, under the repository's name now")
    )
    if key.startswith(_SURFACES):  # coalesced: the twin shows the latest state
        attempts = case((_outbox.c.status == PENDING, _outbox.c.attempts), else_=0)
        again = {"status": PENDING, "attempts": attempts, "payload": effect.payload, "updated_at": now}
        connection.execute(update(_outbox).where(_outbox.c.id == twin).values(**again))


def _one_placement_at_a_time(connection: Connection) -> None:
    """On PostgreSQL, one transaction at a time places repositories (SQLite has one writer):
    two placements of one swap at once (two outbox workers, a webhook and a worker) would each
    act on names the other is moving, and retire live records. The lock is the transaction's;
    what is read after it is what the last placement committed."""
    one_at_a_time(connection, "railyard:placements")


def retired_name(name: str, repository_id: int) -> str:
    """Where the records of a repository that lost its name go: no GitHub name has an `@`."""
    return f"{name.casefold()}@{repository_id}"


def place(
    connection: Connection,
    repository_id: int,
    name: str,
    created_at: float | None,
    now: float,
    installation_id: int | None = None,
) -> None:
    """Make `name` the name of `repository_id`'s records (see the module's docstring); given
    `installation_id`, the installation that reaches the repository now, its writes go through it
    (also when the id has the name already: `place_all` may have placed it)."""
    name = name.casefold()
    _one_placement_at_a_time(connection)
    holder = repository_named(connection, name)
    if holder == repository_id:
        if installation_id is not None:
            _installed(connection, name, installation_id)
        return
    if holder is not None:
        _move(connection, name, retired_name(name, holder), cancel=True)
        _rename(connection, holder, retired_name(name, holder), now)
    current = repository_at(connection, repository_id)
    if current is None:
        # Two first deliveries at once (PostgreSQL): the later insert waits for the earlier and
        # does nothing; that one placed the id and adopted the name's records.
        inserted = connection.execute(
            insert_for(connection)(repositories)
            .values(id=repository_id, full_name=name, updated_at=now)
            .on_conflict_do_nothing()
        )
        if inserted.rowcount and holder is None:
            _adopt(connection, repository_id, name, created_at)
    else:
        _move(connection, current, name, cancel=False)
        _rename(connection, repository_id, name, now)
    if installation_id is not None:
        _installed(connection, name, installation_id)


def _installed(connection: Connection, name: str, installation_id: int) -> None:
    """The repository at `name` is reached through `installation_id` (transferred to an owner with
    another installation of the app): its tickets' installation is what the watchdog and re-checks
    write with, and its effects' is what the outbox writes with, a done surface included (the
    next change re-arms its row, installation and all)."""
    connection.execute(
        update(_tickets).where(_tickets.c.repository == name).values(installation_id=installation_id)
    )
    connection.execute(
        update(_outbox).where(_outbox.c.repository == name).values(installation_id=installation_id)
    )


def _rename(connection: Connection, repository_id: int, name: str, now: float) -> None:
    connection.execute(
        update(repositories).where(repositories.c.id == repository_id).values(full_name=name, updated_at=now)
    )


def _adopt(connection: Connection, repository_id: int, name: str, created_at: float | None) -> None:
    """The tickets stored under `name` without an id become `repository_id`'s, unless they are
    older than the repository: those go to a retired name of their own (shown to nobody)."""
    legacy = (_tickets.c.repository == name, _tickets.c.repository_id.is_(None))
    rows = connection.execute(select(_tickets.c.id, _tickets.c.created_at).where(*legacy)).all()
    older = [row.id for row in rows if created_at is not None and row.created_at.timestamp() < created_at]
    if older:
        connection.execute(
            update(_tickets)
            .where(_tickets.c.id.in_(older))
            .values(repository=literal(f"{name}@legacy-") + cast(_tickets.c.id, String))
        )
    connection.execute(update(_tickets).where(*legacy).values(repository_id=repository_id))


def _move(connection: Connection, from_name: str, to_name: str, *, cancel: bool) -> None:
    """Every record kept under `from_name` now under `to_name`; `cancel`: its pending writes
    are never sent (the name now belongs to another repository)."""
    _retire_unheld(connection, to_name)
    for keyed in _KEYED_BY_NAME:
        column = keyed.c.repository
        connection.execute(update(keyed).where(func.lower(column) == from_name).values(repository=to_name))
    # A PR's head names the repository its branch is in: only one in this repository links
    # tickets by branch (`same_repository`). Its id decides that, and ids never move; the name
    # moves with the repository's for the rows without ids (stored before 0025), which the
    # names decide, and so that every head reads as GitHub names it now.
    head = _pulls.c.head_repository
    connection.execute(update(_pulls).where(func.lower(head) == from_name).values(head_repository=to_name))
    moved = connection.execute(
        select(_outbox.c.id, _outbox.c.dedupe_key, _outbox.c.status, _outbox.c.result).where(
            _outbox.c.repository == to_name
        )
    ).all()
    for row in moved:
        _rekey(connection, row, from_name, to_name, cancel=cancel)


def _retire_unheld(connection: Connection, name: str) -> None:
    """Records move into `name` only while no repository id holds it, so what is kept under it
    then is no known repository's: a name listed by an installation before it was renamed away,
    tickets from before ids. Each row goes to a name of its own, `owner/name@unheld-ROW`, shown to
    nobody, and its pending writes are cancelled: no unique key (a ticket's or a PR's number, an
    observation's fingerprint, an installation's listing, an outbox key) can meet the moving rows."""
    effects = select(_outbox.c.id, _outbox.c.dedupe_key, _outbox.c.status, _outbox.c.result)
    unheld = connection.execute(effects.where(func.lower(_outbox.c.repository) == name)).all()
    for keyed in _KEYED_BY_NAME:
        column = keyed.c.repository
        retired = literal(f"{name}@unheld-") + cast(keyed.c.id, String)
        connection.execute(update(keyed).where(func.lower(column) == name).values(repository=retired))
    for row in unheld:
        _rekey(connection, row, name, f"{name}@unheld-{row.id}", cancel=True)


def _rekey(
    connection: Connection, row: Row[int, str, str, Any], from_name: str, to_name: str, *, cancel: bool
) -> None:
    """The moved effect `row`'s key spelled with `to_name`; `cancel`: never sent if pending."""
    renamed = _renamed_key(row.dedupe_key, from_name, to_name)
    values: dict[str, object] = {"dedupe_key": renamed}
    if renamed != row.dedupe_key:  # a create begun under the old key is found by its marker
        values["result"] = with_earlier_key(row.result, row.dedupe_key)
    if cancel and row.status == "pending":
        values |= {"status": CANCELLED, "last_error": REUSED}
    connection.execute(update(_outbox).where(_outbox.c.id == row.id).values(**values))


def _renamed_key(key: str, from_name: str, to_name: str) -> str:
    """An outbox key naming `from_name` after its kind (`status:owner/name#12`), renamed."""
    for kind in _NAMED_KEYS:
        if key.startswith(kind) and key[len(kind) :].casefold().startswith(from_name):
            rest = key[len(kind) + len(from_name) :]
            if rest[:1] in ("#", ":"):
                return f"{kind}{to_name}{rest}"
    return key
