"""The audit chain against SQL tampering, as a property: a random log written through the door
into SQLite, one random row edited, deleted or inserted with SQL, and `verify` names exactly
that ticket and revision."""

from __future__ import annotations

import shutil
import tempfile
from functools import cache
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Connection, text

from app.store import audit_log
from app.store.database import Database
from app.store.tickets import TicketService
from policies.commands import Accept, Claim, Command, Deliver, Publish, SendBack
from policies.model import Actor, TicketKey
from support.comments import REQUESTER, REVIEWER, RUNNER, Comments
from support.databases import sqlite_database

STEPS: list[tuple[Command, Actor]] = [
    (Publish("Fix the upload"), REQUESTER),
    (Claim(branch="agent/x"), RUNNER),
    (Deliver("Done", branch="agent/x", commit="a" * 40), RUNNER),
    (SendBack("Not yet"), REVIEWER),
    (Deliver("Done now", branch="agent/x", commit="b" * 40), RUNNER),
    (Accept(), REVIEWER),
]
EDITS = {
    "actor": "'mallory'",
    "actor_id": "coalesce(actor_id, 0) + 1",
    "role": "'maintainer'",
    "type": "type || '_forged'",
    "operation_id": "operation_id || 'x'",
    "policy_version": "'forged'",
    "data": "'{\"forged\": true}'",
    "at": "'2020-01-01 00:00:00.000000'",
}


@cache
def template() -> Path:
    """One migrated SQLite file, copied for each example (migrating each time is slow)."""
    path = Path(tempfile.mkdtemp()) / "template.db"
    sqlite_database(path).close()
    return path


MOVE_UP = text("UPDATE ticket_events SET revision = revision + 1 WHERE id = :id")
LATER = text("SELECT id FROM ticket_events WHERE ticket_id = :t AND revision >= :r ORDER BY revision DESC")
DELETE = text("DELETE FROM ticket_events WHERE ticket_id = :t AND revision = :r")
INSERT = text(
    "INSERT INTO ticket_events (ticket_id, revision, type, actor, actor_id, role, at, operation_id, "
    "policy_version, data, digest) SELECT ticket_id, :r, 'inserted', actor, actor_id, role, at, "
    "operation_id, policy_version, data, digest FROM ticket_events WHERE ticket_id = :t AND revision = :r + 1"
)


def tamper(connection: Connection, how: str, where: dict[str, int]) -> None:
    """Delete the row, insert one in its place (the later rows moved up), or edit one field."""
    if how == "delete":
        connection.execute(DELETE, where)
    elif how == "insert":
        for (row_id,) in connection.execute(LATER, where).all():
            connection.execute(MOVE_UP, {"id": row_id})
        connection.execute(INSERT, where)
    else:
        edit = f"UPDATE ticket_events SET {how} = {EDITS[how]} WHERE ticket_id = :t AND revision = :r"  # noqa: S608
        connection.execute(text(edit), where)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lengths=st.lists(st.integers(min_value=1, max_value=len(STEPS)), min_size=1, max_size=3),
    data=st.data(),
)
def test_sql_tampering_with_one_row_is_named_at_exactly_its_ticket_and_revision(
    lengths: list[int], data: st.DataObject
) -> None:
    """Edit any field, delete, or insert (moving the later rows up) one random row: exactly it."""
    folder = Path(tempfile.mkdtemp())
    try:
        shutil.copy(template(), folder / "railyard.db")
        database = Database(f"sqlite:///{folder}/railyard.db")
        service, comments = TicketService(database), Comments()
        for number, length in enumerate(lengths, start=1):
            for command, actor in STEPS[:length]:
                assert service.execute(
                    TicketKey("acme/web", number), command, comments.context(actor)
                ).applied
        assert audit_log.verify(database).broken_ticket is None
        with database.read() as connection:
            rows = connection.execute(text("SELECT ticket_id, revision FROM ticket_events")).all()
        ticket_id, revision = data.draw(st.sampled_from(sorted(rows)))
        how = data.draw(st.sampled_from(["delete", "insert", *EDITS]))
        where = {"t": ticket_id, "r": revision}
        with database.write() as connection:
            connection.execute(text("DROP TRIGGER ticket_events_no_update"))
            connection.execute(text("DROP TRIGGER ticket_events_no_delete"))
            tamper(connection, how, where)
        found = audit_log.verify(database)
        with database.read() as connection:
            number = connection.execute(text("SELECT number FROM tickets WHERE id = :t"), where).scalar_one()
        assert (found.broken_ticket, found.broken_revision) == (TicketKey("acme/web", number), revision)
        database.close()
    finally:
        shutil.rmtree(folder)
