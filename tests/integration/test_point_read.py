"""`Database.point_read`: one SELECT on the driver's own connection, on both databases, with the
driver's errors as SQLAlchemy's (callers such as the HTTP cache catch `SQLAlchemyError`)."""

from __future__ import annotations

import pytest
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
    with pytest.raises(SQLAlchemyError):  # the second insert breaks the primary key: both undone
        with database.driver_write() as cursor:
            cursor.execute(insert, (22, 5.0))
            cursor.execute(insert, (21, 6.0))
    read = "SELECT paused_until FROM installation_limits WHERE installation_id = ?"
    assert database.point_read(read, (21,)) == (5.0,)
    assert database.point_read(read, (22,)) is None
