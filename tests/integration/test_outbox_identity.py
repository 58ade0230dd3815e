"""The outbox writes an effect only into the repository it is for (its GitHub id), on SQLite and
PostgreSQL, GitHub answered by respx: migration 0021 and `enqueue` keep each effect's repository
id; before a write GitHub is asked the id's name (`GET /repositories/{id}`, once a window):
renamed, the records follow and the write goes to the new name; deleted, nothing is written; a
404 for what an earlier write created asks again before anything is created anew."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import respx
from alembic import command
from sqlalchemy import column, insert, select, table

from app.contracts.effect_types import Effect, EffectKind
from app.github.client import GitHubClient
from app.runtime.metrics import Metrics
from app.runtime.outbox import Outbox
from app.store.database import Database, alembic_config
from app.store.effects import comment, effects_table, enqueue
from app.store.repositories import place, place_before_write, repositories
from support.databases import migrated_back_to
from tests.fakes import GITHUB_API, StillClock, app_settings, private_key_pem, token_route

OLD, NEW_NAME = "acme/web", "acme/web-old"
BY_ID = f"{GITHUB_API}/repositories/55"


def an_effect(key: str, repository: str = OLD) -> dict[str, Any]:
    """An outbox_effects row as 0020 stored it (no repository id)."""
    return {
        "dedupe_key": key, "installation_id": 7, "repository": repository, "kind": "comment",
        "payload": {"number": 12, "body": "hi"}, "status": "pending", "next_attempt_at": 1.0,
        "created_at": 1.0, "updated_at": 1.0, "attempts": 0, "ambiguous": False,
    }  # fmt: skip


EFFECTS_0020 = table(
    effects_table.name,
    *(column(c.name, c.type) for c in effects_table.c if c.name not in ("repository_id", "claims")),
)
"""outbox_effects with 0020's columns only (no Python-side defaults for later ones)."""


@pytest.fixture
def before_0021(database: Database) -> Iterator[Database]:
    """The database at 0020, before effects kept their repository's id, back to head afterwards."""
    with migrated_back_to(database, "0020"):
        yield database


def ids_by_key(database: Database) -> dict[str, int | None]:
    with database.read() as connection:
        rows = connection.execute(select(effects_table.c.dedupe_key, effects_table.c.repository_id))
        return dict(rows.all())


def test_the_migration_gives_each_pending_effect_the_id_its_name_belongs_to(before_0021: Database) -> None:
    """acme/web is repository 55: its effects (whatever the case of the name) get 55; an effect
    of a name railyard knows no id for keeps none (it is written as before)."""
    with before_0021.write() as connection:
        connection.execute(insert(repositories).values(id=55, full_name=OLD, updated_at=1.0))
        connection.execute(
            insert(EFFECTS_0020),  # the rows name 0020's columns only
            [an_effect("comment:a"), an_effect("comment:b", "Acme/Web"), an_effect("comment:c", "a/b")],
        )
    command.upgrade(alembic_config(before_0021.url), "head")
    assert ids_by_key(before_0021) == {
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


async def test_an_effect_of_a_renamed_repository_is_written_under_its_new_name_and_its_records_follow(
    database: Database, outbox: tuple[Outbox, StillClock]
) -> None:
    """GitHub says repository 55 is acme/web-old now (no webhook said so): the comment is created
    there, never on acme/web, and the effect and the records are acme/web-old's."""
    runner, clock = outbox
    respx.get(BY_ID).mock(return_value=named("Acme/Web-Old"))
    reused, renamed = created(OLD), created(NEW_NAME)
    put(database, clock, comment(7, OLD, 12, "hello", key="op-1"))
    assert await runner.run_once() == 1
    assert (reused.call_count, renamed.call_count) == (0, 1)
    effect = the_effect(database)
    assert (effect["status"], effect["repository"], effect["repository_id"]) == ("done", NEW_NAME, 55)
    with database.read() as connection:
        assert connection.execute(select(repositories.c.full_name)).scalars().all() == [NEW_NAME]


async def test_an_effect_of_a_deleted_repository_fails_saying_so_and_writes_nothing(
    database: Database, outbox: tuple[Outbox, StillClock]
) -> None:
    """GitHub has no repository 55 any more (404), whoever holds the name: the effect fails at
    once, its error saying why, and nothing is sent."""
    runner, clock = outbox
    respx.get(BY_ID).mock(return_value=httpx.Response(404, json={"message": "Not Found"}))
    posted = created(OLD)
    put(database, clock, comment(7, OLD, 12, "hello", key="op-2"))
    assert await runner.run_once() == 1
    effect = the_effect(database)
    assert effect["status"] == "failed" and posted.call_count == 0
    assert "repository 55" in effect["last_error"] and "nothing written" in effect["last_error"]


async def test_the_name_is_asked_once_a_window_per_repository(
    database: Database, outbox: tuple[Outbox, StillClock]
) -> None:
    """Three writes of acme/web cost one question to GitHub; after the window, one more."""
    runner, clock = outbox
    asked = respx.get(BY_ID).mock(return_value=named(OLD))
    posted = created(OLD)
    put(database, clock, *(comment(7, OLD, 12, f"note {i}", key=f"op-w{i}") for i in range(3)))
    assert await runner.run_once() == 3
    assert (asked.call_count, posted.call_count) == (1, 3)
    clock.now += 31
    put(database, clock, comment(7, OLD, 12, "later", key="op-w3"))
    assert await runner.run_once() == 1
    assert (asked.call_count, posted.call_count) == (2, 4)


async def test_a_404_for_an_earlier_comment_creates_it_again_only_where_the_id_still_has_the_name(
    database: Database, outbox: tuple[Outbox, StillClock]
) -> None:
    """Within the window (GitHub said acme/web a moment ago) the status comment's edit meets a 404:
    GitHub is asked again, says acme/web-old (renamed, the name reused since), and the comment is
    edited there; nothing is created on either. Asked again and still acme/web, it was deleted:
    created again on acme/web."""
    runner, clock = outbox
    asked = respx.get(BY_ID).mock(side_effect=[named(OLD), named(NEW_NAME)])
    respx.patch(f"{GITHUB_API}/repos/{OLD}/issues/comments/777").mock(return_value=httpx.Response(404))
    edited = respx.patch(f"{GITHUB_API}/repos/{NEW_NAME}/issues/comments/777").mock(
        return_value=httpx.Response(200, json={"id": 777})
    )
    reused, renamed = created(OLD), created(NEW_NAME)
    put(database, clock, editing("comment:s"))
    assert await runner.run_once() == 1
    assert (asked.call_count, edited.call_count, reused.call_count, renamed.call_count) == (2, 1, 0, 0)
    assert the_effect(database)["status"] == "done"

    with database.write() as connection:  # as if never renamed: the comment itself was deleted
        place(connection, 55, OLD, None, clock.now)
    asked.side_effect = [named(OLD), named(OLD)]
    put(database, clock, editing("comment:t"))
    clock.now += 31
    assert await runner.run_once() == 1
    assert reused.call_count == 1


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


def by_key(database: Database) -> dict[str, tuple[str, str, str | None]]:
    with database.read() as connection:
        rows = connection.execute(
            select(effects_table.c.dedupe_key, effects_table.c.status, effects_table.c.repository,
                   effects_table.c.last_error)
        ).all()  # fmt: skip
    return {row.dedupe_key: (row.status, row.repository, row.last_error) for row in rows}


async def test_an_effect_enqueued_while_its_repository_is_renamed_is_written_under_the_new_name(
    database: Database, outbox: tuple[Outbox, StillClock]
) -> None:
    """PostgreSQL only (SQLite has one writer: the two transactions cannot interleave). A unit
    enqueues a reply for acme/web (55) while another worker's `renamed` webhook places 55 under
    acme/web-old and commits first, so the move never saw the reply: no id holds acme/web now,
    which is not a reused name. GitHub is asked and the reply is written to acme/web-old."""
    if database.is_sqlite:
        pytest.skip("one writer on SQLite: the two transactions cannot interleave")
    runner, clock = outbox
    respx.get(BY_ID).mock(return_value=named(NEW_NAME))
    reused, renamed = created(OLD), created(NEW_NAME)
    with database.write() as command_unit:
        enqueue(command_unit, [comment(7, OLD, 12, "claimed", key="op-race")], clock.now)
        with database.write() as rename_webhook:
            place(rename_webhook, 55, NEW_NAME, None, clock.now)
    assert await runner.run_once() == 1
    assert (reused.call_count, renamed.call_count) == (0, 1)
    assert by_key(database) == {"comment:op-race": ("done", NEW_NAME, None)}


def stray(database: Database, key: str, payload: dict[str, Any]) -> None:
    """An effect of 55 left under acme/web, as that race leaves it, 55 being acme/web-old."""
    with database.write() as connection:
        place(connection, 55, NEW_NAME, None, 1.0)
        row = {**an_effect(key), "kind": "status_comment", "payload": payload, "repository_id": 55}
        connection.execute(insert(effects_table).values(**row))


async def test_an_effect_left_under_the_old_name_is_written_where_github_says_even_within_the_window(
    database: Database, outbox: tuple[Outbox, StillClock]
) -> None:
    """That race's outcome, on both databases: GitHub said acme/web a moment ago (the window),
    but no id holds acme/web now, so GitHub is asked again; the effect and its key follow the id."""
    runner, clock = outbox
    asked = respx.get(BY_ID).mock(side_effect=[named(OLD), named(NEW_NAME)])
    created(OLD)
    put(database, clock, comment(7, OLD, 12, "first", key="op-a"))
    assert await runner.run_once() == 1
    stray(database, "status:acme/web#12", {"number": 12, "body": "status"})
    renamed = created(NEW_NAME)
    assert await runner.run_once() == 1
    assert (asked.call_count, renamed.call_count) == (2, 1)
    assert by_key(database)["status:acme/web-old#12"] == ("done", NEW_NAME, None)


def test_an_effect_left_under_the_old_name_whose_surface_was_moved_rearms_that_surface(
    database: Database,
) -> None:
    """The rename moved acme/web#12's status comment (written, done) to acme/web-old; the effect
    left behind is that surface again: the moved one is written again, with its payload, and the
    one left behind is cancelled saying so, never a second status comment."""
    stray(database, "status:acme/web#12", {"number": 12, "body": "latest"})
    with database.write() as connection:
        done = {**an_effect("status:acme/web-old#12", NEW_NAME), "status": "done", "repository_id": 55}
        twin = connection.execute(insert(effects_table).values(**done)).inserted_primary_key[0]
        left = connection.execute(
            select(effects_table.c.id).where(effects_table.c.repository == OLD)
        ).scalar()
    assert place_before_write(database, 55, NEW_NAME, left, 2.0, {}) is None
    state = by_key(database)
    assert state["status:acme/web-old#12"] == ("pending", NEW_NAME, None)
    assert state["status:acme/web#12"][0] == "cancelled" and f"effect {twin}" in str(
        state["status:acme/web#12"][2]
    )
    with database.read() as connection:
        payload = connection.execute(
            select(effects_table.c.payload).where(effects_table.c.id == twin)
        ).scalar()
    assert payload == {"number": 12, "body": "latest"}


def site(database: Database, clock: StillClock, site_56: str) -> dict[str, respx.Route]:
    """acme/site is repository 56, GitHub names 55 acme/site and 56 `site_56` now (no webhook said
    so); each has a pending comment on #12; the routes asking GitHub each id's name."""
    with database.write() as connection:
        place(connection, 56, "acme/site", None, clock.now)
    put(database, clock, comment(7, OLD, 12, "for web", key="op-web"))
    put(database, clock, comment(7, "acme/site", 12, "for site", key="op-site"))
    return {
        "55": respx.get(BY_ID).mock(return_value=named("acme/site")),
        "56": respx.get(f"{GITHUB_API}/repositories/56").mock(
            return_value=httpx.Response(200, json={"id": 56, "full_name": site_56})
        ),
    }


async def test_a_name_passed_on_unseen_moves_its_holder_where_github_says_and_cancels_none_of_its_writes(
    database: Database, outbox: tuple[Outbox, StillClock]
) -> None:
    """acme/site became acme/site-old and acme/web became acme/site: placing 55 under acme/site
    asks GitHub where 56 is (one read) and moves 56 there first; both comments are written, each
    in its own repository, and 56's is not asked again within the window."""
    runner, clock = outbox
    asked = site(database, clock, "acme/site-old")
    into_55, into_56 = created("acme/site"), created("acme/site-old")
    assert await runner.run_once() == 2
    assert (into_55.call_count, into_56.call_count) == (1, 1)
    assert (asked["55"].call_count, asked["56"].call_count) == (1, 1)
    assert by_key(database) == {
        "comment:op-web": ("done", "acme/site", None),
        "comment:op-site": ("done", "acme/site-old", None),
    }


async def test_names_swapped_unseen_move_both_repositories_and_cancel_nothing(
    database: Database, outbox: tuple[Outbox, StillClock]
) -> None:
    """acme/web (55) and acme/site (56) swapped names: both records move, each comment is written
    where GitHub has its repository now, and nothing is cancelled."""
    runner, clock = outbox
    site(database, clock, OLD)
    into_55, into_56 = created("acme/site"), created(OLD)
    assert await runner.run_once() == 2
    assert (into_55.call_count, into_56.call_count) == (1, 1)
    assert by_key(database) == {
        "comment:op-web": ("done", "acme/site", None),
        "comment:op-site": ("done", OLD, None),
    }
    with database.read() as connection:
        held = dict(connection.execute(select(repositories.c.id, repositories.c.full_name)).all())
    assert held == {55: "acme/site", 56: OLD}


async def test_a_holder_github_no_longer_has_is_retired_and_its_writes_cancelled(
    database: Database, outbox: tuple[Outbox, StillClock]
) -> None:
    """Repository 56 is gone (404) and acme/web took its name acme/site: 56's comment is
    cancelled unwritten, 55's written to acme/site."""
    runner, clock = outbox
    site(database, clock, "")["56"].mock(return_value=httpx.Response(404, json={"message": "Not Found"}))
    into_55 = created("acme/site")
    assert await runner.run_once() == 2
    assert into_55.call_count == 1
    state = by_key(database)
    assert state["comment:op-web"] == ("done", "acme/site", None)
    assert state["comment:op-site"][0] == "cancelled"
