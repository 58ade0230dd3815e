"""The audit chain in the database, on SQLite and PostgreSQL: the door writes each event's
digest, `audit.verify` names the first edited, deleted or inserted row, migration 0016 chains
the events written before it, and `railyard audit verify` / `export` answer from the command line."""

from __future__ import annotations

import csv
import gc
import hashlib
import importlib.util
import io
import json
import threading
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from sqlalchemy import insert, select, text

from app.cli import main
from app.settings import Settings
from app.store import audit_log as audit_store
from app.store.codec import ticket_to_data
from app.store.database import Database, alembic_config
from app.store.tables import TicketRow, table
from app.store.tickets import TicketService, events_table
from policies.audit import AuditedEvent, canonical_json
from policies.commands import Accept, Claim, Deliver, Publish
from policies.events import Event, EventType
from policies.fold import apply_all
from policies.model import Actor, Ticket, TicketKey
from policies.states import Role, WorkState
from support.databases import migrated_back_to
from tests.fakes import REQUESTER, REVIEWER, RUNNER, Comments

KEY, OTHER = TicketKey("acme/web", 12), TicketKey("acme/api", 3)
tickets = table(TicketRow)


def lifecycle(service: TicketService, comments: Comments, key: TicketKey = KEY) -> None:
    """Created, published, claimed, delivered, accepted: five events."""
    assert service.execute(key, Publish("Fix the upload"), comments.context(REQUESTER)).applied
    assert service.execute(key, Claim(branch=f"agent/{key.number}"), comments.context(RUNNER)).applied
    deliver = Deliver("Done", branch=f"agent/{key.number}", commit="a" * 40)
    assert service.execute(key, deliver, comments.context(RUNNER)).applied
    assert service.execute(key, Accept(), comments.context(REVIEWER)).applied


@contextmanager
def tampering(database: Database) -> Iterator[Any]:
    """A connection with `ticket_events`' append-only triggers lifted, as someone with write access
    to the database can do; the triggers are back afterwards."""
    sqlite = database.engine.dialect.name == "sqlite"
    with database.write() as connection:
        if sqlite:
            connection.execute(text("DROP TRIGGER ticket_events_no_update"))
            connection.execute(text("DROP TRIGGER ticket_events_no_delete"))
        else:
            connection.execute(text("ALTER TABLE ticket_events DISABLE TRIGGER ticket_events_append_only"))
        yield connection
        if sqlite:
            for verb in ("UPDATE", "DELETE"):
                connection.execute(
                    text(
                        f"CREATE TRIGGER ticket_events_no_{verb.lower()} BEFORE {verb} ON ticket_events "
                        "BEGIN SELECT RAISE(ABORT, 'ticket_events is append-only'); END"
                    )
                )
        else:
            connection.execute(text("ALTER TABLE ticket_events ENABLE TRIGGER ticket_events_append_only"))


def ticket_id(database: Database, key: TicketKey) -> int:
    """The ticket's row id."""
    with database.read() as connection:
        where = (tickets.c.repository == key.repository, tickets.c.number == key.number)
        return int(connection.execute(select(tickets.c.id).where(*where)).scalar_one())


def two_tickets(database: Database) -> TicketService:
    """acme/web#12 and acme/api#3, each through a whole lifecycle."""
    service, comments = TicketService(database), Comments()
    lifecycle(service, comments, KEY)
    lifecycle(service, comments, OTHER)
    return service


def test_every_event_the_door_writes_carries_the_digest_chained_from_the_one_before(
    database: Database,
) -> None:
    """The first from `ticket:<id>`, each next from its predecessor's digest: recomputable by hand."""
    TicketService(database).execute(KEY, Publish("Fix the upload"), Comments().context(REQUESTER))
    with database.read() as connection:
        rows = connection.execute(select(events_table).order_by(events_table.c.revision)).mappings().all()
    previous = f"ticket:{ticket_id(database, KEY)}"
    for row in rows:
        fields = AuditedEvent(**{k: row[k] for k in AuditedEvent.__dataclass_fields__ if k != "digest"})
        previous = hashlib.sha256(previous.encode() + b"\n" + canonical_json(fields)).hexdigest()
        assert row["digest"] == previous
    assert len(rows) == 2  # created, published


def test_verify_counts_every_event_when_every_chain_holds(database: Database) -> None:
    """Two whole tickets: 10 events of 2 tickets, no break."""
    two_tickets(database)
    assert audit_store.verify(database) == audit_store.Verified(events=10, tickets=2)
    assert audit_store.verify(database, "ACME/API") == audit_store.Verified(events=5, tickets=1)


def test_an_edited_event_breaks_the_chain_at_its_ticket_and_revision(database: Database) -> None:
    """Someone rewrites who accepted acme/api#3 (revision 5): verify names acme/api#3 at 5."""
    two_tickets(database)
    with tampering(database) as connection:
        connection.execute(
            text("UPDATE ticket_events SET actor = 'mallory' WHERE ticket_id = :id AND revision = 5"),
            {"id": ticket_id(database, OTHER)},
        )
    found = audit_store.verify(database)
    assert (found.broken_ticket, found.broken_revision) == (OTHER, 5)
    assert audit_store.verify(database, "acme/web").broken_ticket is None


def test_a_deleted_event_breaks_the_chain_at_its_revision(database: Database) -> None:
    """The claim (revision 3) of acme/web#12 deleted: verify names acme/web#12 at 3."""
    two_tickets(database)
    with tampering(database) as connection:
        connection.execute(
            text("DELETE FROM ticket_events WHERE ticket_id = :id AND revision = 3"),
            {"id": ticket_id(database, KEY)},
        )
    found = audit_store.verify(database)
    assert (found.broken_ticket, found.broken_revision) == (KEY, 3)


def test_a_snapshot_copied_from_an_accepted_ticket_breaks_at_the_ticket_its_events_never_accepted(
    database: Database,
) -> None:
    """acme/web#13 only delivered; its row given #12's accepted snapshot and `work`: railyard would
    decide from an acceptance the log never recorded, and verify names #13 and what differs."""
    service, comments = TicketService(database), Comments()
    lifecycle(service, comments, KEY)
    delivered = TicketKey("acme/web", 13)
    assert service.execute(delivered, Publish("Other work"), comments.context(REQUESTER)).applied
    assert service.execute(delivered, Claim(branch="agent/13"), comments.context(RUNNER)).applied
    deliver = Deliver("Done", branch="agent/13", commit="b" * 40)
    assert service.execute(delivered, deliver, comments.context(RUNNER)).applied
    assert audit_store.verify(database) == audit_store.Verified(events=9, tickets=2)
    with database.write() as connection:  # `tickets` has no trigger: a plain UPDATE
        connection.execute(
            text(
                "UPDATE tickets SET snapshot = (SELECT snapshot FROM tickets WHERE number = 12), "
                "work = 'accepted' WHERE number = 13"
            )
        )
    loaded = service.load(delivered)
    assert loaded is not None and loaded.work is WorkState.ACCEPTED
    found = audit_store.verify(database)
    assert (found.broken_ticket, found.broken_revision) == (delivered, 4)
    assert {"work", "review", "last_delivery", "column work"} <= set(found.differs)


def unaccept(database: Database, key: TicketKey) -> None:
    """The ticket's acceptance (revision 5) deleted and its row lowered to revision 4."""
    with tampering(database) as connection:
        connection.execute(
            text("DELETE FROM ticket_events WHERE ticket_id = :id AND revision = 5"),
            {"id": ticket_id(database, key)},
        )
        connection.execute(
            text("UPDATE tickets SET revision = 4 WHERE number = :number"), {"number": key.number}
        )


def test_a_deleted_last_event_with_the_revision_lowered_breaks_where_the_snapshot_outruns_the_log(
    database: Database,
) -> None:
    """The acceptance (revision 5) deleted and `tickets.revision` lowered to 4: every chain holds up
    to 4, but the snapshot still says accepted, so verify names acme/web#12 at 4."""
    two_tickets(database)
    unaccept(database, KEY)
    found = audit_store.verify(database)
    assert (found.broken_ticket, found.broken_revision) == (KEY, 4)
    assert {"work", "review", "column work"} <= set(found.differs)
    assert audit_store.verify(database, "acme/api") == audit_store.Verified(events=5, tickets=1)


def test_a_state_column_edited_alone_breaks_and_is_named(database: Database) -> None:
    """The board's `integration` column set to merged while the events say nothing of a merge."""
    two_tickets(database)
    with database.write() as connection:
        connection.execute(text("UPDATE tickets SET integration = 'merged' WHERE number = 3"))
    found = audit_store.verify(database)
    assert (found.broken_ticket, found.differs) == (OTHER, ("column integration",))


def test_what_the_events_do_not_determine_may_change_without_a_break(database: Database) -> None:
    """The installation, the repository's id and the times are the row's own, not the events':
    changing them breaks nothing."""
    two_tickets(database)
    with database.write() as connection:
        connection.execute(
            text(
                "UPDATE tickets SET installation_id = 99, repository_id = 4242, "
                "updated_at = created_at, created_at = updated_at"
            )
        )
    assert audit_store.verify(database) == audit_store.Verified(events=10, tickets=2)


def test_an_event_the_fold_cannot_read_breaks_at_its_ticket(database: Database) -> None:
    """A chained event of a type railyard does not know: the chain holds, the replay does not."""
    two_tickets(database)
    with tampering(database) as connection:
        connection.execute(
            text("UPDATE ticket_events SET type = 'no_such_type' WHERE ticket_id = :id AND revision = 2"),
            {"id": ticket_id(database, KEY)},
        )
        _migration().backfill(connection)  # the digests recomputed: only the replay can tell
    found = audit_store.verify(database)
    assert (found.broken_ticket, found.differs) == (KEY, ("event 2, which does not replay",))


def test_a_break_found_early_and_an_export_left_early_leave_no_cursor_open(database: Database) -> None:
    """verify stops at the first break, and an export's reader may stop at any row: the query's
    result is closed either way (on PostgreSQL a server-side cursor psycopg would otherwise
    close, and warn of, whenever the garbage collector came to it)."""
    two_tickets(database)
    with tampering(database) as connection:
        connection.execute(
            text("DELETE FROM ticket_events WHERE ticket_id = :id AND revision = 3"),
            {"id": ticket_id(database, KEY)},
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert audit_store.verify(database).broken_ticket == KEY
        rows = audit_store.export(database)
        next(rows)
        rows.close()
        gc.collect()
    assert [str(warning.message) for warning in caught if warning.category is ResourceWarning] == []


def test_an_inserted_event_breaks_the_chain_at_its_revision(database: Database) -> None:
    """A copy of acme/web#12's acceptance inserted as revision 6, a digest made up: named at 6."""
    two_tickets(database)
    with database.read() as connection:
        last = connection.execute(select(events_table).where(events_table.c.revision == 5)).mappings().first()
    assert last is not None
    forged = {k: v for k, v in last.items() if k != "id"} | {"revision": 6, "digest": "0" * 64}
    with database.write() as connection:
        connection.execute(insert(events_table), forged)  # inserting needs no lifted trigger
    found = audit_store.verify(database)
    assert (found.broken_ticket, found.broken_revision) == (
        TicketKey(*_key_of(database, last["ticket_id"])),
        6,
    )


def _key_of(database: Database, id_: int) -> tuple[str, int]:
    with database.read() as connection:
        row = connection.execute(
            select(tickets.c.repository, tickets.c.number).where(tickets.c.id == id_)
        ).one()
    return row.repository, row.number


def test_an_event_without_its_digest_breaks_the_chain(database: Database) -> None:
    """A digest emptied (or an event written by a process from before 0016): named."""
    two_tickets(database)
    with tampering(database) as connection:
        connection.execute(
            text("UPDATE ticket_events SET digest = NULL WHERE ticket_id = :id AND revision = 2"),
            {"id": ticket_id(database, KEY)},
        )
    found = audit_store.verify(database)
    assert (found.broken_ticket, found.broken_revision) == (KEY, 2)


def test_concurrent_writers_of_one_ticket_leave_one_unbroken_chain(database: Database) -> None:
    """Eight runners race to claim each of five tickets: every chain holds afterwards."""
    service, comments = TicketService(database), Comments()
    runners = [Actor(f"agent-{i}[bot]", frozenset({Role.RUNNER}), id=900 + i) for i in range(8)]
    for number in range(1, 6):
        key = TicketKey("acme/race", number)
        assert service.execute(key, Publish("Race me"), comments.context(REQUESTER)).applied
        barrier = threading.Barrier(len(runners))

        def claim(runner: Actor, key: TicketKey = key, barrier: threading.Barrier = barrier) -> bool:
            barrier.wait()
            return service.execute(key, Claim(), comments.context(runner)).applied

        with ThreadPoolExecutor(max_workers=len(runners)) as pool:
            assert sum(pool.map(claim, runners)) == 1
    assert audit_store.verify(database) == audit_store.Verified(events=15, tickets=5)


# --- migration 0017 -------------------------------------------------------------------------


def _migration() -> Any:
    path = Path(__file__).resolve().parents[2] / "app/store/migrations/versions/0017_audit.py"
    spec = importlib.util.spec_from_file_location("migration_0017", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def before_0016(database: Database) -> Iterator[Database]:
    """The database at 0015, before the audit chain, brought back to head afterwards."""
    with migrated_back_to(database, "0016"):
        yield database


def test_the_migration_chains_the_rows_stored_before_it_and_keeps_the_log_append_only(
    before_0016: Database,
) -> None:
    """Rows stored at 0015 (no digest column; a float and non-ASCII in the data) get chained;
    `ticket_events` still refuses updates afterwards."""
    at = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
    data = {"via": "comment", "n": 1.0, "é": "ü", "no_code": False, "owner": "rachel", "new_digest": "d"}
    kinds = ((1, "created"), (2, "published"), (3, "description_changed"))
    with before_0016.write() as connection:
        for number in (1, 2):
            # The row the door would have written for these events (verify replays them against it).
            events = [
                Event(EventType(kind), "rachel", None, at, f"op-{number}-{r}", "cfg:1", data, 7)
                for r, kind in kinds
            ]
            replayed = apply_all(Ticket(TicketKey("acme/web", number)), events)
            created = connection.execute(
                insert(tickets).values(
                    repository="acme/web", number=number, revision=3, work="open",
                    integration="unreported", deployment="not_applicable",
                    snapshot=ticket_to_data(replayed), created_at=at, updated_at=at,
                )
            ).inserted_primary_key  # fmt: skip
            assert created is not None
            # As railyard's column type stores it (on SQLite, UTC text to the microsecond).
            sqlite = connection.dialect.name == "sqlite"
            stored_at = at.replace(tzinfo=None).isoformat(" ", "microseconds") if sqlite else at
            connection.execute(
                text(
                    "INSERT INTO ticket_events (ticket_id, revision, type, actor, actor_id, role, at, "
                    "operation_id, policy_version, data) VALUES (:t, :r, :type, 'rachel', 7, NULL, :at, "
                    ":op, 'cfg:1', :data)"
                ),
                [
                    {"t": created[0], "r": r, "type": kind, "at": stored_at, "op": f"op-{number}-{r}",
                     "data": json.dumps(data)}
                    for r, kind in kinds
                ],
            )  # fmt: skip
    command.upgrade(alembic_config(before_0016.url), "head")

    assert audit_store.verify(before_0016) == audit_store.Verified(events=6, tickets=2)
    with pytest.raises(Exception, match="append-only"), before_0016.write() as connection:
        connection.execute(text("UPDATE ticket_events SET digest = 'x'"))


def test_after_the_migration_the_door_chains_on_from_the_backfilled_digests(database: Database) -> None:
    """Tickets half done at 0015, migrated, then finished: every chain holds."""
    service, comments = TicketService(database), Comments()
    assert service.execute(KEY, Publish("Fix the upload"), comments.context(REQUESTER)).applied
    assert service.execute(KEY, Claim(branch="agent/12"), comments.context(RUNNER)).applied
    config = alembic_config(database.url)
    command.downgrade(config, "0016")  # drops the digests: the log as 0015 kept it
    command.upgrade(config, "head")
    deliver = Deliver("Done", branch="agent/12", commit="a" * 40)
    assert service.execute(KEY, deliver, comments.context(RUNNER)).applied
    assert service.execute(KEY, Accept(), comments.context(REVIEWER)).applied
    assert audit_store.verify(database) == audit_store.Verified(events=5, tickets=1)


def test_the_backfill_pages_through_a_log_and_gives_the_digests_the_door_wrote(database: Database) -> None:
    """Digests emptied, then rebuilt two events at a time: exactly those the door had written."""
    two_tickets(database)
    with database.read() as connection:
        written = connection.execute(select(events_table.c.id, events_table.c.digest)).all()
    with tampering(database) as connection:
        connection.execute(text("UPDATE ticket_events SET digest = NULL"))
        _migration().backfill(connection, page=2)
    with database.read() as connection:
        rebuilt = connection.execute(select(events_table.c.id, events_table.c.digest)).all()
    assert sorted(rebuilt) == sorted(written)


# --- the command line -----------------------------------------------------------------------


def run(database: Database, *argv: str) -> tuple[int, str, str]:
    """`railyard ARGV` in-process against the database: status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), settings=Settings(DATABASE_URL=database.url), out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def test_audit_verify_exits_0_with_a_count_then_1_naming_the_broken_ticket(database: Database) -> None:
    """Clean: 0 and how many events; one row edited: 1 and `acme/web#12 ... revision 4`."""
    two_tickets(database)
    assert run(database, "audit", "verify") == (
        0, "railyard: 10 events of 2 tickets checked: every chain holds.\n", ""
    )  # fmt: skip
    with tampering(database) as connection:
        connection.execute(
            text("UPDATE ticket_events SET policy_version = 'forged' WHERE ticket_id = :id AND revision = 4"),
            {"id": ticket_id(database, KEY)},
        )
    status, out, _ = run(database, "audit", "verify")
    assert status == 1 and out.startswith("railyard: acme/web#12: the audit chain breaks at revision 4 ")
    assert run(database, "audit", "verify", "--repo", "acme/api")[0] == 0


def test_audit_verify_exits_1_naming_what_of_a_ticket_row_its_events_do_not_replay_to(
    database: Database,
) -> None:
    """acme/api#3's row lowered to revision 4 with its acceptance deleted: 1, the ticket, its
    revision and the fields that differ; acme/web alone still holds."""
    two_tickets(database)
    unaccept(database, OTHER)
    status, out, _ = run(database, "audit", "verify")
    assert status == 1
    assert out.startswith(
        "railyard: acme/api#3: the stored ticket (revision 4) is not what its events replay to; "
        "it differs in work, "
    )
    assert out.endswith(
        "column work, snapshot's revision (the ticket's row edited, or its last events deleted).\n"
    )
    assert run(database, "audit", "verify", "--repo", "acme/web")[0] == 0


@pytest.mark.parametrize(
    "argv",
    [
        ("audit", "verify", "--repo", "acme"),
        ("audit", "export", "--repo", "acme/web#1"),
        ("audit", "export", "--since", "yesterday"),
        ("audit", "export", "--since", "0001-01-01T00:00:00+01:00"),  # before what UTC can hold
    ],
)
def test_bad_audit_arguments_exit_2_with_a_clear_error(database: Database, argv: tuple[str, ...]) -> None:
    """A malformed --repo or --since: exit 2, a line saying what is expected, nothing written."""
    status, out, err = run(database, *argv)
    assert (status, out) == (2, "") and "expects" in err


def test_audit_export_writes_one_json_line_per_event_with_what_recomputes_its_digest(
    database: Database,
) -> None:
    """Every line holds the listed fields; rebuilt from its own line, each digest chains on."""
    two_tickets(database)
    status, out, _ = run(database, "audit", "export", "--repo", "acme/web")
    lines = [json.loads(line) for line in out.splitlines()]
    assert status == 0 and [line["revision"] for line in lines] == [1, 2, 3, 4, 5]
    assert {line["ticket"] for line in lines} == {"acme/web#12"}
    assert {"type", "actor", "actor_id", "role", "via", "operation_id", "policy_version", "at"} <= set(
        lines[0]
    )
    previous = f"ticket:{lines[0]['ticket_id']}"
    for line in lines:
        fields = {k: line[k] for k in ("type", "actor", "actor_id", "role", "at", "operation_id",
                                       "policy_version", "data", "revision")}  # fmt: skip
        canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        previous = hashlib.sha256(f"{previous}\n{canonical}".encode()).hexdigest()
        assert line["digest"] == previous


def test_audit_export_since_a_date_leaves_out_the_events_before_it(database: Database) -> None:
    """--since after every event: nothing; --since long before: everything."""
    two_tickets(database)
    assert run(database, "audit", "export", "--since", "2999-01-01") == (0, "", "")
    assert len(run(database, "audit", "export", "--since", "2000-01-01T00:00:00Z")[1].splitlines()) == 10


def test_audit_export_csv_has_a_header_and_one_quoted_row_per_event_no_formula_runs(
    database: Database,
) -> None:
    """A login and an operation id starting with `=`/`@`, a comma, a quote and a newline in the
    data: still one row per event, and no cell a spreadsheet would run starts with = + - @."""
    service, comments = TicketService(database), Comments()
    lifecycle(service, comments)
    evil = Actor('=HYPERLINK("http://x","a,b")', frozenset({Role.REQUESTER}), id=666)
    context = comments.context(evil, operation_id="@SUM(1)\nx")
    service.execute(OTHER, Publish('Title with "quotes", commas\nand lines'), context)
    status, out, _ = run(database, "audit", "export", "--format", "csv")
    rows = list(csv.reader(io.StringIO(out)))
    assert status == 0 and rows[0][:4] == ["ticket", "ticket_id", "revision", "type"]
    assert len(rows) == 1 + 5 + 2
    assert all(not cell.startswith(("=", "+", "-", "@")) for row in rows for cell in row)
    assert rows[-1][4] == "'" + evil.login and rows[-1][8] == "'@SUM(1)\nx"
