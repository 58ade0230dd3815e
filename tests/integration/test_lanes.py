"""Under pytest-xdist each worker tests against a PostgreSQL database of its own."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, make_url, text

from tests.conftest import postgres_url, worker_postgres_url

URL = "postgresql+psycopg://railyard:secret@127.0.0.1:5432/railyard_test"


def _drop(url: str, name: str) -> None:
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_a_worker_gets_a_database_of_its_own_created_on_first_use() -> None:
    """gw99 gets `<database>_gw99` on the same server, existing afterwards; asking again is fine."""
    url = postgres_url()
    if url is None:
        pytest.skip("PostgreSQL not available: set RAILYARD_TEST_POSTGRES_URL (make test does)")
    name = f"{make_url(url).database}_gw99"
    _drop(url, name)
    try:
        derived = worker_postgres_url(url, "gw99")
        assert worker_postgres_url(url, "gw99") == derived
        engine = create_engine(derived)
        try:
            with engine.connect() as connection:
                assert connection.execute(text("SELECT current_database()")).scalar_one() == name
        finally:
            engine.dispose()
        assert make_url(derived).set(database=make_url(url).database) == make_url(url)
    finally:
        _drop(url, name)


@pytest.mark.parametrize("worker", [None, "master"])
def test_a_run_without_workers_uses_the_database_it_was_given(worker: str | None) -> None:
    """No xdist (or its controller): the URL is the one RAILYARD_TEST_POSTGRES_URL names, untouched."""
    assert worker_postgres_url(URL, worker) == URL


def test_a_worker_id_that_is_not_xdists_is_refused() -> None:
    """Only gw0, gw1, ... become part of a database name."""
    with pytest.raises(ValueError, match="PYTEST_XDIST_WORKER"):
        worker_postgres_url(URL, 'gw0"; DROP DATABASE x; --')
