"""`Database.point_read`: one SELECT on the driver's own connection, on both databases, with the
driver's errors as SQLAlchemy's (callers such as the HTTP cache catch `SQLAlchemyError`)."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from app.store.database import Database
from app.store.limits import SharedLimits


@pytest.mark.asyncio
async def test_a_pause_written_is_read_back_and_a_missing_row_is_none(database: Database) -> None:
    limits = SharedLimits(database)
    assert await limits.paused_until(7, now=100.0) is None
    await limits.pause(7, until=160.0)
    assert await limits.paused_until(7, now=100.0) == 160.0
    assert await limits.paused_until(7, now=200.0) is None  # lifted
    assert (
        database.point_read("SELECT paused_until FROM installation_limits WHERE installation_id = ?", (8,))
        is None
    )


@pytest.mark.asyncio
async def test_a_content_write_slot_goes_to_one_claimer_and_the_others_are_told_when_it_frees(
    database: Database,
) -> None:
    """One slot per spacing for an installation, whoever races for it (one statement on
    PostgreSQL, two on SQLite); a refused claimer gets the slot's time; a pause is kept apart."""
    limits = SharedLimits(database)
    answers = await asyncio.gather(*(limits.claim_write(7, 100.0, 1.0) for _ in range(6)))
    assert answers.count(None) == 1 and [a for a in answers if a is not None] == [101.0] * 5
    assert await limits.claim_write(8, 100.0, 1.0) is None  # another installation's own slot
    assert await limits.claim_write(7, 100.5, 1.0) == 101.0
    assert await limits.claim_write(7, 101.0, 1.0) is None  # freed: taken again
    await limits.pause(7, until=160.0)
    assert await limits.claim_write(7, 101.5, 1.0) == 102.0
    assert await limits.paused_until(7, now=101.5) == 160.0  # the slot's upsert leaves the pause


def test_a_driver_error_is_sqlalchemys_and_the_pool_stays_usable(database: Database) -> None:
    with pytest.raises(SQLAlchemyError):
        database.point_read("SELECT nothing FROM no_such_table WHERE id = ?", (1,))
    row = database.point_read("SELECT count(*) FROM installation_limits WHERE installation_id = ?", (1,))
    assert row == (0,)


def test_a_driver_write_commits_and_a_failed_one_changes_nothing(database: Database) -> None:
    insert = database.driver_sql(
        "INSERT INTO installation_limits (installation_id, paused_until, next_content_write_at) "
        "VALUES (?, ?, 0)"
    )
    with database.driver_write() as cursor:
        cursor.execute(insert, (21, 5.0))
    with pytest.raises(SQLAlchemyError):  # the second insert breaks the primary key
        with database.driver_write() as cursor:
            cursor.execute(insert, (22, 5.0))
            cursor.execute(insert, (21, 6.0))
    read = "SELECT paused_until FROM installation_limits WHERE installation_id = ?"
    assert database.point_read(read, (21,)) == (5.0,)
    # SQLite: one transaction, both undone; PostgreSQL: each statement its own commit
    assert database.point_read(read, (22,)) == (None if database.is_sqlite else (5.0,))
    with database.driver_write() as cursor:  # the connection went back to the pool as it came
        cursor.execute(insert, (23, 5.0))
    with pytest.raises(SQLAlchemyError), database.write() as connection:  # and it does not autocommit
        connection.execute(text("INSERT INTO installation_limits VALUES (24, 1.0, 0)"))
        connection.execute(text("INSERT INTO installation_limits VALUES (23, 1.0, 0)"))
    assert database.point_read(read, (24,)) is None


def test_a_write_after_point_reads_on_the_same_connections_is_one_transaction(database: Database) -> None:
    """A point read runs without BEGIN on PostgreSQL; the connection it gives back must not
    autocommit, or a later transaction's first statement would stay when its second fails."""
    read = "SELECT paused_until FROM installation_limits WHERE installation_id = ?"
    for _ in range(database.engine.pool.size() + 2):  # every pooled connection, at least once
        database.point_read(read, (1,))
    with pytest.raises(SQLAlchemyError), database.write() as connection:
        connection.execute(text("INSERT INTO installation_limits VALUES (31, 1.0, 0)"))
        connection.execute(text("INSERT INTO installation_limits VALUES (31, 2.0, 0)"))
    assert database.point_read(read, (31,)) is None
    with database.read() as connection:  # and a read block (no BEGIN on PostgreSQL) reads
        assert connection.execute(text("SELECT count(*) FROM installation_limits")).scalar() == 0
    with pytest.raises(SQLAlchemyError), database.write() as connection:
        connection.execute(text("INSERT INTO installation_limits VALUES (32, 1.0, 0)"))
        connection.execute(text("INSERT INTO installation_limits VALUES (32, 2.0, 0)"))
    assert database.point_read(read, (32,)) is None


@pytest.mark.asyncio
@pytest.mark.postgres
async def test_loop_reads_survive_a_killed_connection_and_a_new_event_loop(
    postgres_database: Database,
) -> None:
    """PostgreSQL's reads on the event loop (`app.store.loop_statements`): a connection the server
    dropped fails one read with SQLAlchemy's error, and the next read opens a new one."""
    database = postgres_database
    database.point_read("SELECT 1 WHERE 1 = ?", (1,))  # warm the pool's connections
    read = "SELECT pg_backend_pid() WHERE 1 = ?"
    first = await database.point_read_here(read, (1,))
    assert first is not None
    with database.engine.connect() as admin:
        admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": first[0]})
        admin.commit()
    with pytest.raises(SQLAlchemyError):
        await database.point_read_here(read, (1,))
    again = await database.point_read_here(read, (1,))
    assert again is not None and again != first
    await asyncio.gather(*(database.point_read_here(read, (1,)) for _ in range(10)))  # at most 4 at once


@pytest.mark.postgres
def test_loop_reads_belong_to_their_event_loop(postgres_database: Database) -> None:
    read = "SELECT pg_backend_pid() WHERE 1 = ?"
    first = asyncio.run(postgres_database.point_read_here(read, (1,)))
    second = asyncio.run(postgres_database.point_read_here(read, (1,)))  # a new loop: new connections
    assert first is not None and second is not None and first != second


@pytest.mark.asyncio
async def test_a_write_here_commits_by_itself_and_answers_its_rows(database: Database) -> None:
    """`write_here` (on PostgreSQL on the event loop, on SQLite on a thread): the write is
    committed when it answers, a failed one changes nothing, and RETURNING comes back."""
    upsert = (
        "INSERT INTO installation_limits (installation_id, paused_until, next_content_write_at) "
        "VALUES (?, ?, 0) ON CONFLICT (installation_id) DO UPDATE SET paused_until = ? "
        "WHERE installation_limits.paused_until < ? RETURNING paused_until"
    )
    assert await database.write_here(upsert, (41, 5.0, 5.0, 5.0)) == [(5.0,)]
    assert await database.write_here(upsert, (41, 3.0, 3.0, 3.0)) == []  # the condition kept it
    assert database.point_read(
        "SELECT paused_until FROM installation_limits WHERE installation_id = ?", (41,)
    ) == (5.0,)
    assert await database.write_here("DELETE FROM installation_limits WHERE installation_id = ?", (41,)) == []
    with pytest.raises(SQLAlchemyError):
        await database.write_here("INSERT INTO installation_limits (installation_id) VALUES (?)", (None,))
    assert database.point_read("SELECT count(*) FROM installation_limits", ()) == (0,)


@pytest.mark.asyncio
@pytest.mark.postgres
async def test_bookkeeping_on_the_loop_skips_the_wal_flush_and_the_rest_does_not(
    postgres_database: Database,
) -> None:
    lazy = await postgres_database.bookkeep_on_loop("SHOW synchronous_commit", {})
    durable = await postgres_database.write_here(
        "SELECT current_setting('synchronous_commit') WHERE 1 = ?", (1,)
    )
    assert (lazy, durable) == ([("off",)], [("on",)])


@pytest.mark.asyncio
@pytest.mark.postgres
async def test_write_here_is_durable_whatever_the_url_says(postgres_database: Database) -> None:
    """The outbox's in-flight mark and its `done` go through `write_here`: their commits wait for
    the disk as the engine's do, even where the URL (or the server) says otherwise."""
    url = postgres_database.engine.url.render_as_string(hide_password=False)
    separator = "&" if "?" in url else "?"
    database = Database(f"{url}{separator}options=-c%20synchronous_commit%3Doff")
    try:
        with database.read() as connection:
            assert connection.execute(text("SHOW synchronous_commit")).scalar() == "on"
        rows = await database.write_here("SELECT current_setting('synchronous_commit') WHERE 1 = ?", (1,))
        assert rows == [("on",)]
    finally:
        database.close()


@pytest.mark.asyncio
@pytest.mark.postgres
async def test_a_server_restart_fails_one_loop_statement_not_one_per_idle_connection(
    postgres_database: Database,
) -> None:
    """Every backend of the loop's connections terminated (a restart): one statement fails, and
    the next ones open new connections, as SQLAlchemy's pool does after invalidating itself."""
    database = postgres_database
    pids = await asyncio.gather(
        *(
            database.write_here("SELECT pg_backend_pid() FROM pg_sleep(0.1) WHERE 1 = ?", (1,))
            for _ in range(4)
        )
    )
    with database.engine.connect() as admin:
        for rows in pids:
            admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": rows[0][0]})
        admin.commit()
    failures = 0
    for _ in range(6):
        try:
            await database.write_here("SELECT 1 WHERE 1 = ?", (1,))
        except SQLAlchemyError:
            failures += 1
    assert failures == 1


@pytest.mark.asyncio
async def test_point_reads_on_the_loop_open_again_after_close_and_are_read_only(database: Database) -> None:
    read = "SELECT paused_until FROM installation_limits WHERE installation_id = ?"
    assert await database.point_read_here(read, (51,)) is None
    database.close()
    assert await database.point_read_here(read, (51,)) is None  # reopened, not "closed database"
    if database.is_sqlite:  # the kept reader bypasses the write lock: it is read-only
        assert await database.point_read_here("PRAGMA query_only", ()) == (1,)


@pytest.mark.postgres
def test_bookkeeping_connections_keep_the_urls_options_and_skip_the_wal_flush(
    postgres_database: Database,
) -> None:
    """The queue's bookkeeping connections add `synchronous_commit=off` to what the URL asks
    for (here a statement timeout), and leave everything else the engine's."""
    url = postgres_database.engine.url.render_as_string(hide_password=False)
    separator = "&" if "?" in url else "?"
    database = Database(f"{url}{separator}options=-c%20statement_timeout%3D1234")
    try:
        with database.bookkeeping_postgres() as cursor:
            cursor.execute("SHOW statement_timeout")
            assert cursor.fetchone() == ("1234ms",)
            cursor.execute("SHOW synchronous_commit")
            assert cursor.fetchone() == ("off",)
        with database.read() as connection:
            assert connection.execute(text("SHOW synchronous_commit")).scalar() == "on"
    finally:
        database.close()
