"""How each connection is set up as it opens: SQLite's pragmas, its immediate write
transactions and its checkpoints; PostgreSQL's durable commits, and the lazy ones of the
bookkeeping connections (`app.store.database.Database`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, event
from sqlalchemy.engine import Engine

from app.store.write_lock import BUSY_TIMEOUT_S

if TYPE_CHECKING:
    from app.store.database import Database

BUSY_TIMEOUT_MS = int(BUSY_TIMEOUT_S * 1000)
READ_HERE_BUSY_MS = 250
"""How long a read on the event loop's own connections waits for SQLite (WAL readers wait only
while a connection recovers the log), opening the connection included: a read that would wait
longer fails (`point_read_here` and `SqlStore.read_once` then read again on a thread, which
waits as long as any reader; a handler's read fails its delivery, which is retried)."""
HERE_BUDGET_SECONDS = 0.002
"""How long the event loop's bookkeeping (`bookkeeping_here`) may run before SQLite is told to
stop it and it is done on a thread instead."""
HERE_PROGRESS_STEPS = 1_000
"""SQLite virtual-machine steps between two looks at that budget."""
WAL_SIZE_LIMIT = 256 * 1024 * 1024
"""The WAL file is trimmed to this once started over. Above what a flood writes between two
restarts (`app.store.checkpoints`: 64 MB and up to a second's commits, about 100 MB at 5,000
webhooks a second), so commits overwrite blocks the file already has: an fsync then has no file
size to journal (the commit's p50 under a flood 0.80 -> 0.70 ms)."""
WRITE_OPTION = "railyard_write"
_NO_AUTOCHECKPOINT = "railyard_no_autocheckpoint"


def configure_sqlite(engine: Engine, database: Database, busy_ms: int = BUSY_TIMEOUT_MS) -> None:
    @event.listens_for(engine, "checkout")
    def _checkpoints(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        # Once a server's checkpointer runs (app.store.checkpoints), no commit checkpoints.
        if database.background_checkpoints:
            quiet_checkpoints(dbapi_connection, record.info)

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event issue BEGIN itself (pysqlite would defer it).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute(f"PRAGMA busy_timeout={busy_ms}")
        cursor.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")  # the WAL file trimmed once restarted
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        immediate = connection.get_execution_options().get(WRITE_OPTION, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def commit_sqlite(cursor: Any) -> None:
    """COMMIT on a driver cursor, with no progress handler on its connection: SQLite calls the
    handler once more as a statement ends, and an interruption there fails a COMMIT that has
    already committed (`Database.bookkeeping_here` would then report written work as not done)."""
    cursor.connection.set_progress_handler(None, 0)
    cursor.execute("COMMIT")


def quiet_checkpoints(driver_connection: Any, info: dict[Any, Any]) -> None:
    """No commit of this connection checkpoints any more (`info`: its pool record's, which
    remembers it): at checkout once the checkpointer runs, and for the connections kept out of
    the pool (bookkeeping)."""
    if not info.get(_NO_AUTOCHECKPOINT):
        driver_connection.execute("PRAGMA wal_autocheckpoint=0")
        info[_NO_AUTOCHECKPOINT] = True


def configure_postgres(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _durable(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("SET synchronous_commit = on")
        cursor.close()
        dbapi_connection.commit()


def lazy_commits(dbapi_connection: Any, _record: Any) -> None:
    """A bookkeeping connection (`Database.bookkeeping_postgres`): its commits skip the WAL's
    flush, and a single statement is its own transaction."""
    cursor = dbapi_connection.cursor()
    cursor.execute("SET synchronous_commit = off")
    cursor.close()
    dbapi_connection.commit()
    dbapi_connection.autocommit = True
