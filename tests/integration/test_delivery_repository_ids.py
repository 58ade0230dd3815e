"""Pending webhook deliveries stored before 0026 take their repository's id and an ordering key
by that id, so one stored before the upgrade and one after, of the same issue, stay in one order
(SQLite and PostgreSQL)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from alembic import command
from sqlalchemy import text

from app.store.database import Database, alembic_config
from app.store.intake import Received, row_of
from app.store.queue_admin import requeue
from support.databases import migrated_back_to

NOW = 1_800_000_000.0


@pytest.fixture
def before_0026(database: Database) -> Iterator[Database]:
    """The database at 0025, before deliveries kept their repository's id, back to head afterwards."""
    with migrated_back_to(database, "0025"):
        yield database


def stored(database: Database, delivery_id: str, status: str, key: str, payload: dict[str, object]) -> None:
    """A row as 0025's intake wrote it: the repository by name in its key, no id column."""
    with database.write() as connection:
        connection.execute(
            text(
                "INSERT INTO webhook_deliveries (delivery_id, event, action, installation_id, repository, "
                "ordering_key, status, payload, payload_bytes, received_at, attempts, next_attempt_at) "
                "VALUES (:id, 'issue_comment', 'created', 7, 'acme/web', :key, :status, :payload, 2, :at, 0, :at)"  # noqa: E501
            ),
            {"id": delivery_id, "key": key, "status": status, "payload": json.dumps(payload), "at": NOW},
        )


def test_pending_deliveries_are_keyed_by_their_repositorys_id(before_0026: Database) -> None:
    """A pending comment on acme/web#12 (repository 1001) gets id 1001 and key 1001#12, the key
    a new comment on #12 gets now, whatever the repository is called then; a done one and a
    pending one whose payload names no id keep theirs."""
    comment = {"repository": {"id": 1001, "full_name": "acme/web"}, "issue": {"number": 12}}
    stored(before_0026, "pending", "pending", "acme/web#12", comment)
    stored(before_0026, "done", "done", "acme/web#12", comment)
    stored(before_0026, "nameless", "pending", "acme/web#13", {"repository": {"full_name": "acme/web"}})
    command.upgrade(alembic_config(before_0026.url), "head")
    with before_0026.read() as connection:
        rows = connection.execute(
            text(
                "SELECT delivery_id, repository_id, ordering_key FROM webhook_deliveries ORDER BY delivery_id"
            )
        ).all()
    assert [tuple(row) for row in rows] == [
        ("done", None, "acme/web#12"),
        ("nameless", None, "acme/web#13"),
        ("pending", 1001, "1001#12"),
    ]
    renamed = {**comment, "repository": {"id": 1001, "full_name": "acme/site"}}
    new = row_of(Received("new", "issue_comment", True, NOW), json.dumps(renamed).encode())
    assert (new.repository_id, new.ordering_key) == (1001, "1001#12")


def test_a_downgrade_names_pending_deliveries_repository_in_their_key_again(database: Database) -> None:
    """Downgraded to 0025, whose intake keys a new comment on acme/web#12 `acme/web#12`, a
    pending comment stored at 0026 (key `1001#12`) takes that key again, so the two stay in one
    order; a done one keeps its key, and so does an installation's."""
    config = alembic_config(database.url)
    comment = {"repository": {"id": 1001, "full_name": "Acme/Web"}, "issue": {"number": 12}}
    with database.write() as connection:
        for delivery_id, status in (("pending", "pending"), ("done", "done")):
            connection.execute(
                text(
                    "INSERT INTO webhook_deliveries (delivery_id, event, action, installation_id, "
                    "repository, ordering_key, status, payload, payload_bytes, received_at, attempts, "
                    "next_attempt_at, repository_id) VALUES (:id, 'issue_comment', 'created', 7, "
                    "'acme/web', '1001#12', :status, :payload, 2, :at, 0, :at, 1001)"
                ),
                {"id": delivery_id, "status": status, "payload": json.dumps(comment), "at": NOW},
            )
    command.downgrade(config, "0025")
    try:
        with database.read() as connection:
            rows = connection.execute(
                text("SELECT delivery_id, ordering_key FROM webhook_deliveries ORDER BY delivery_id")
            ).all()
        assert [tuple(row) for row in rows] == [("done", "1001#12"), ("pending", "acme/web#12")]
    finally:
        command.upgrade(config, "head")


def test_a_delivery_from_before_redelivered_takes_the_key_by_id(database: Database) -> None:
    """A done comment on #12 stored before 0026 (keyed by name, no id), queued again by
    `railyard redeliver`: it takes the id and the key a new comment on #12 has, so the two run in
    one order; one whose payload names no id keeps its key."""
    comment = {"repository": {"id": 1001, "full_name": "acme/web"}, "issue": {"number": 12}}
    stored(database, "old", "done", "acme/web#12", comment)
    stored(database, "nameless", "done", "acme/web#13", {"repository": {"full_name": "acme/web"}})
    assert sorted(requeue(database, ["old", "nameless"], NOW + 1)) == ["nameless", "old"]
    with database.read() as connection:
        rows = connection.execute(
            text("SELECT delivery_id, repository_id, ordering_key, status FROM webhook_deliveries ORDER BY 1")
        ).all()
    assert [tuple(row) for row in rows] == [
        ("nameless", None, "acme/web#13", "pending"),
        ("old", 1001, "1001#12", "pending"),
    ]


def test_a_backlog_past_one_page_is_keyed_whole(before_0026: Database) -> None:
    """The migration reads pending rows a page (200) at a time: a backlog of 205 is keyed whole."""
    comment = {"repository": {"id": 1001, "full_name": "acme/web"}, "issue": {"number": 12}}
    for n in range(205):
        stored(before_0026, f"d{n:03}", "pending", "acme/web#12", comment)
    command.upgrade(alembic_config(before_0026.url), "head")
    with before_0026.read() as connection:
        keys = connection.execute(text("SELECT DISTINCT ordering_key FROM webhook_deliveries")).scalars()
        assert list(keys) == ["1001#12"]
