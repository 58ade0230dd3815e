"""`app.store.compiled`: a store statement compiled once for the driver's own connections keeps
SQLAlchemy's checks of what is bound to it: every bind given, no naive time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy.dialects.postgresql.psycopg import dialect as psycopg_dialect

from app.store.compiled import compiled_for
from app.store.signs import _OPENED_AT
from app.store.tickets import _COMMANDS_SINCE

DIALECT = psycopg_dialect()  # type: ignore[no-untyped-call]
SINCE = datetime(2026, 12, 1, tzinfo=UTC)


def test_the_statement_is_compiled_once_with_its_literals_values() -> None:
    found = compiled_for(_COMMANDS_SINCE, DIALECT)
    assert compiled_for(_COMMANDS_SINCE, DIALECT) is found
    assert "%(b_repository)s" in found.sql and found.defaults["change_1"] == "/%"
    values = found.bound({"b_repository": "acme/web", "b_actor": 7, "b_since": SINCE})
    assert values == {"b_repository": "acme/web", "b_actor": 7, "b_since": SINCE, "change_1": "/%"}


def test_a_bind_left_out_is_an_error_not_a_null() -> None:
    with pytest.raises(ValueError, match="b_actor"):
        compiled_for(_COMMANDS_SINCE, DIALECT).bound({"b_repository": "acme/web", "b_since": SINCE})


def test_a_naive_time_is_refused_as_the_column_refuses_it() -> None:
    naive = {"b_repository": "acme/web", "b_actor": 7, "b_since": datetime(2026, 12, 1)}
    with pytest.raises(ValueError, match="naive"):
        compiled_for(_COMMANDS_SINCE, DIALECT).bound(naive)


def test_rows_are_read_by_name_and_position_with_their_times_in_utc() -> None:
    found = compiled_for(_OPENED_AT, DIALECT)
    new_york = datetime(2026, 12, 1, 4, 0, tzinfo=timezone(timedelta(hours=-5)))
    [row] = found.rows([(new_york,)])
    assert row[0] == row.opened_at == new_york  # type: ignore[attr-defined]
    assert row[0].tzinfo is UTC and row[0].hour == 9
