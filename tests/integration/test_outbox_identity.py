"""The outbox writes an effect only into the repository it is for (its GitHub id), on SQLite and
PostgreSQL: migration 0020 and `enqueue` keep each effect's repository id."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from alembic import command
from sqlalchemy import insert, select

from app.contracts.effect_types import Effect, EffectKind
from app.store.database import Database, alembic_config
from app.store.effects import comment, effects_table, enqueue
from app.store.repositories import place, repositories
from tests.fakes import GITHUB_API

OLD, NEW_NAME = "acme/web", "acme/web-old"
BY_ID = f"{GITHUB_API}/repositories/55"


def an_effect(key: str, repository: str = OLD) -> dict[str, Any]:
    """An outbox_effects row as 0019 stored it (no repository id)."""
    return {
        "dedupe_key": key, "installation_id": 7, "repository": repository, "kind": "comment",
        "payload": {"number": 12, "body": "hi"}, "status": "pending", "next_attempt_at": 1.0,
        "created_at": 1.0, "updated_at": 1.0,
    }  # fmt: skip


@pytest.fixture
def before_0020(database: Database) -> Iterator[Database]:
    """The database at 0019, before effects kept their repository's id, back to head afterwards."""
    config = alembic_config(database.url)
    command.downgrade(config, "0019")
    try:
        yield database
    finally:
        command.upgrade(config, "head")


def ids_by_key(database: Database) -> dict[str, int | None]:
    with database.read() as connection:
        rows = connection.execute(select(effects_table.c.dedupe_key, effects_table.c.repository_id))
        return dict(rows.all())


def test_the_migration_gives_each_pending_effect_the_id_its_name_belongs_to(before_0020: Database) -> None:
    """acme/web is repository 55: its effects (whatever the case of the name) get 55; an effect
    of a name railyard knows no id for keeps none (it is written as before)."""
    with before_0020.write() as connection:
        connection.execute(insert(repositories).values(id=55, full_name=OLD, updated_at=1.0))
        connection.execute(
            insert(effects_table),  # the rows name 0019's columns only
            [an_effect("comment:a"), an_effect("comment:b", "Acme/Web"), an_effect("comment:c", "a/b")],
        )
    command.upgrade(alembic_config(before_0020.url), "head")
    assert ids_by_key(before_0020) == {
        "comment:a": 55,
        "comment:b": 55,
        "comment:c": None,
    }  # a/b: no id known


def test_enqueue_stamps_the_id_the_name_belongs_to_and_a_coalesced_surface_takes_it_later(
    database: Database,
) -> None:
    """An effect takes the id of its repository's name in the enqueuing transaction; a surface
    enqueued before the name had an id takes it when enqueued again."""
    key = "status:acme/new#1"
    surface = Effect(EffectKind.STATUS_COMMENT, 7, "acme/new", key, {"number": 1}, coalesce=True)
    with database.write() as connection:
        place(connection, 55, OLD, None, 1.0)
        enqueue(connection, [comment(7, "Acme/Web", 12, "hi", key="a"), surface], 1.0)
    assert ids_by_key(database) == {"comment:a": 55, key: None}
    with database.write() as connection:
        place(connection, 70, "acme/new", None, 2.0)
        enqueue(connection, [surface], 2.0)
    assert ids_by_key(database) == {"comment:a": 55, key: 70}
