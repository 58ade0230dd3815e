"""`railyard audit verify` names a ticket whose stored row no release can read (an edited
snapshot), rather than stopping on it with an unexpected error (found in review)."""

from __future__ import annotations

from sqlalchemy import text

from app.store.database import Database
from tests.integration.test_audit import run, tampering, two_tickets


def test_an_unreadable_snapshot_is_named_not_a_crash(database: Database) -> None:
    two_tickets(database)
    with tampering(database) as connection:
        connection.execute(text('UPDATE tickets SET snapshot = \'{"work": "claimed"}\' WHERE number = 3'))
    status, out, err = run(database, "audit", "verify")
    assert status == 1, (status, out, err)
    assert "acme/api#3" in out and "cannot be read" in out, (status, out, err)
    assert "unexpected" not in err
