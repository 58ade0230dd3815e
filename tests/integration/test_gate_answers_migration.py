"""Migration 0028 on SQLite and PostgreSQL: `gate_approvals` keeps every answer the gate gives
(`approved`, `answered_at`) and where its range started (`base`). Rows from before are approvals
without a base; a downgrade drops the rejections, which 0027 would read as approvals."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from alembic import command
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

from app.store.database import Database, alembic_config
from app.store.gate_approvals import approved, bases, record
from handlers.gate_ports import GateAnswer
from support.databases import migrated_back_to

M12, HEAD = "1" * 40, "e" * 40
NOW = 1_800_000_000.0
OLD_ROW = (
    "INSERT INTO gate_approvals (repository_id, environment, sha, request, run_id, deployment_id, "
    "approved_at) VALUES (7, 'production', :sha, :request, 4242, :deployment, :at)"
)


@pytest.fixture
def before_0028(database: Database) -> Iterator[Database]:
    """The database at 0027, when the gate kept its approvals only, back to head afterwards."""
    with migrated_back_to(database, "0027"):
        yield database


def test_rows_from_before_are_approvals_and_a_rejection_can_be_kept_after(before_0028: Database) -> None:
    """Two approvals kept at 0027 (M12 for deployment 901, HEAD for 905) are approvals at 0028,
    with the time they were given as `answered_at` and no base; a rejection kept after the upgrade
    (deployment 899, its range from M12) is an answer but no approved sha, and its base counts."""
    with before_0028.write() as connection:
        connection.execute(text(OLD_ROW), {"sha": M12, "request": "901", "deployment": 901, "at": NOW})
        connection.execute(text(OLD_ROW), {"sha": HEAD, "request": "905", "deployment": 905, "at": NOW + 1})
    command.upgrade(alembic_config(before_0028.url), "head")
    with before_0028.read() as connection:
        rows = connection.execute(
            text("SELECT sha, approved, answered_at FROM gate_approvals ORDER BY request")
        ).all()
        assert [(sha, bool(yes), at) for sha, yes, at in rows] == [(M12, True, NOW), (HEAD, True, NOW + 1)]
        assert bases(connection, 7, "production") == set()
    with before_0028.write() as connection:
        record(connection, GateAnswer(7, "production", "2" * 40, 4243, "899", 899, False, NOW + 2, M12))
    with before_0028.read() as connection:
        assert approved(connection, 7, "production", [M12, HEAD, "2" * 40]) == {M12, HEAD}
        assert bases(connection, 7, "production") == {M12}


def test_a_row_must_say_whether_it_was_an_approval(database: Database) -> None:
    """The default that made the rows from before approvals is gone: a row written without
    `approved` is refused, never taken for an approval."""
    with pytest.raises(IntegrityError), database.write() as connection:
        connection.execute(
            text(
                "INSERT INTO gate_approvals (repository_id, environment, sha, request, run_id, "
                "deployment_id, answered_at) VALUES (7, 'production', :sha, '901', 4242, 901, :at)"
            ),
            {"sha": M12, "at": NOW},
        )


def test_a_downgrade_keeps_the_approvals_and_drops_the_rejections(database: Database) -> None:
    """Downgraded to 0027, which reads every row as an approval: the approval of M12 stays (its
    `approved_at` the time it was given), the rejection of HEAD is dropped, so HEAD never becomes
    a commit 0027 trusts; upgraded again, the approval is still one."""
    config = alembic_config(database.url)
    with database.write() as connection:
        record(connection, GateAnswer(7, "Production", M12, 4242, "901", 901, True, NOW))
        record(connection, GateAnswer(7, "production", HEAD, 4243, "902", 902, False, NOW + 1))
    command.downgrade(config, "0027")
    try:
        with database.read() as connection:
            columns = {column["name"] for column in inspect(connection).get_columns("gate_approvals")}
            assert "approved" not in columns and "base" not in columns and "approved_at" in columns
            rows = connection.execute(text("SELECT sha, request, approved_at FROM gate_approvals")).all()
        assert [tuple(row) for row in rows] == [(M12, "901", NOW)]
    finally:
        command.upgrade(config, "head")
    with database.read() as connection:
        assert approved(connection, 7, "production", [M12, HEAD]) == {M12}
