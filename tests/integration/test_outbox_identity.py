"""The outbox writes an effect only into the repository it is for (its GitHub id), on SQLite and
PostgreSQL: migration 0020 and `enqueue` keep each effect's repository id; an effect whose name
the records give to another id now is cancelled, never written."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import respx
from alembic import command
from sqlalchemy import insert, select

from app.contracts.effect_types import Effect, EffectKind
from app.github.client import GitHubClient
from app.runtime.metrics import Metrics
from app.runtime.outbox import Outbox
from app.store.database import Database, alembic_config
from app.store.effects import comment, effects_table, enqueue
from app.store.repositories import place, repositories
from tests.fakes import GITHUB_API, StillClock, app_settings, private_key_pem, token_route

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


@pytest.fixture
async def outbox(database: Database) -> AsyncIterator[tuple[Outbox, StillClock]]:
    """An outbox (test clock, no spacing) whose GitHub is respx; acme/web is repository 55."""
    clock = StillClock()
    settings = app_settings("sqlite://", GITHUB_API_URL=GITHUB_API, PRIVATE_KEY=private_key_pem())
    github = GitHubClient(settings, Metrics(), clock=clock)
    await github.start()
    with database.write() as connection:
        place(connection, 55, OLD, None, clock.now)
    with respx.mock:
        token_route()
        yield Outbox(database, github, Metrics(), app_id=1, clock=clock, spacing=0.0), clock
    await github.close()


def named(full_name: str) -> httpx.Response:
    return httpx.Response(200, json={"id": 55, "full_name": full_name})


def put(database: Database, clock: StillClock, *effects: Effect) -> None:
    with database.write() as connection:
        enqueue(connection, effects, clock.now)


def created(repository: str) -> respx.Route:
    """POSTs of comments on `repository`#12, answered 201."""
    return respx.post(f"{GITHUB_API}/repos/{repository}/issues/12/comments").mock(
        return_value=httpx.Response(201, json={"id": 901})
    )


def editing(key: str) -> Effect:
    """A comment effect that edits comment 777 on acme/web#12, which an earlier write created."""
    return Effect(EffectKind.COMMENT, 7, OLD, key, {"number": 12, "body": "b", "comment_id": 777})


def the_effect(database: Database) -> dict[str, Any]:
    with database.read() as connection:
        return dict(connection.execute(select(effects_table)).mappings().one())


async def test_an_effect_whose_name_another_repository_holds_now_is_cancelled_unwritten(
    database: Database, outbox: tuple[Outbox, StillClock]
) -> None:
    """An effect of repository 54 meets records that give acme/web to repository 55 (its webhook
    came in between): cancelled, nothing asked or written. One cancelled while the outbox held
    it (repository 56 took the name) stays cancelled, unwritten."""
    runner, clock = outbox
    asked, posted = respx.get(BY_ID).mock(return_value=named(OLD)), created(OLD)
    with database.write() as connection:
        connection.execute(insert(effects_table).values(**an_effect("comment:x"), repository_id=54))
    assert await runner.run_once() == 1
    assert the_effect(database)["status"] == "cancelled"
    assert "another repository" in the_effect(database)["last_error"]

    with database.write() as connection:
        connection.execute(effects_table.delete())
    put(database, clock, comment(7, OLD, 12, "hello", key="op-y"))
    [row] = await runner._leases.claim_due(clock.now, 10)
    with database.write() as connection:
        place(connection, 56, OLD, None, clock.now)  # the name reused: 55's writes cancelled
    await runner._perform(row)
    effect = the_effect(database)
    assert (effect["status"], asked.call_count, posted.call_count) == ("cancelled", 0, 0)
