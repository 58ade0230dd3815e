"""The database: one engine per process, durable commits, immediate write transactions.

SQLite runs in WAL mode with `synchronous=FULL` (every commit is fsynced before it
returns) and write transactions start with `BEGIN IMMEDIATE`, so writers queue on the
busy timeout instead of failing half-way. PostgreSQL runs with `synchronous_commit=on`.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

import structlog
from sqlalchemy import Connection, Select, create_engine, event, func, inspect
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from app.contracts.database_url import normalize_database_url
from app.store.compiled import MANY_ROWS, compiled_for
from app.store.connection_setup import (
    BUSY_TIMEOUT_MS,
    HERE_BUDGET_SECONDS,
    HERE_PROGRESS_STEPS,
    READ_HERE_BUSY_MS,
    WRITE_OPTION,
    configure_postgres,
    configure_sqlite,
    lazy_commits,
    quiet_checkpoints,
)
from app.store.hops import off_loop
from app.store.write_lock import WriteLock, sqlite_path

if TYPE_CHECKING:
    from alembic.config import Config

    from app.store.loop_statements import LoopStatements

log = structlog.get_logger(__name__)

# Alembic's "package:directory" form: found through importlib.resources, wherever app.store is installed.
MIGRATIONS = "app.store:migrations"


class NotNowError(Exception):
    """The event loop's bookkeeping could not be done at once, and nothing of it was written:
    do it on a thread (`Database.bookkeeping`)."""

    def __init__(self, reason: str, *, over_budget: bool = False) -> None:
        super().__init__(reason)
        self.over_budget = over_budget
        """Whether a statement ran past `HERE_BUDGET_SECONDS` (the rest: a lock was taken)."""


class Database:
    """The process's engine, with explicit read and write transactions."""

    def __init__(self, url: str, *, pool_size: int = 10) -> None:
        self.url = normalize_database_url(url)
        self._pool_size = pool_size
        if self.is_sqlite:
            self.engine = create_engine(
                self.url,
                connect_args={"timeout": BUSY_TIMEOUT_MS / 1000, "check_same_thread": False},
                pool_size=pool_size,
                max_overflow=pool_size,
            )
            configure_sqlite(self.engine, self)
            self._one_writer: WriteLock | None = WriteLock(sqlite_path(self.url))
        else:
            self._one_writer = None
            self.engine = create_engine(self.url, pool_size=pool_size, max_overflow=pool_size)
            configure_postgres(self.engine)
        self._here: Engine | None = None  # SQLite: the event loop's own connections, for reads
        self._point_readers = threading.local()  # SQLite: each thread's connection for point reads
        self._opened_readers: list[sqlite3.Connection] = []
        self._lazy: Engine | None = None  # PostgreSQL: connections whose commits skip the WAL flush
        self._lazy_opening = threading.Lock()
        self._on_loop: dict[bool, LoopStatements] = {}  # PostgreSQL: the event loop's, by durability
        self._bookkeeper: Any = None  # SQLite: one connection that commits without fsync
        self._loop_bookkeeper: Any = None  # SQLite: the same, for the event loop, never waiting
        self.background_checkpoints = False
        """SQLite: WAL checkpoints are taken by a thread of their own, never inside a commit."""

    @property
    def is_sqlite(self) -> bool:
        """Whether this is the default single-file database."""
        return self.url.startswith("sqlite")

    def writing(self, timeout: float | None = None) -> AbstractContextManager[Any]:
        """Held around every write transaction.

        SQLite allows one writer at a time, and a writer that finds the database locked waits
        in SQLite's busy handler, which sleeps 1, 2, 5, 10... ms between tries: a stall every
        time the worker and the intake collide. Queued on this lock instead (`WriteLock`: this
        process's threads, and every process on the same file, the intake's writer process and
        CLI commands among them), the next writer starts the moment the last one commits.
        PostgreSQL needs no such lock. `timeout`: how long another process's hold is waited for
        (30 s by default, as SQLite's busy timeout), then `OperationalError`.
        """
        if self._one_writer is None:
            return nullcontext()
        return self._one_writer if timeout is None else self._one_writer.held(timeout)

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction, committed (and fsynced) when the block ends without error."""
        with self.writing(), self.engine.connect() as connection:
            connection.execution_options(**{WRITE_OPTION: True})
            with connection.begin():
                yield connection

    @contextmanager
    def bookkeeping(self) -> Iterator[Any]:
        """A driver cursor (SQLite) for queue bookkeeping: leases, outcomes, run records.

        These writes are redone rather than lost: a power cut can take the last few of them
        (a process crash cannot: the pages are already the OS's), and then a delivery is
        processed again, which changes nothing. So they are committed without waiting for
        the disk (`synchronous=NORMAL`), and the next durable commit of anything else in
        the same write-ahead log, such as the intake's, takes them to disk too. The
        connection is used under the process's write lock, one thread at a time.
        """
        assert self._one_writer is not None, "bookkeeping() is for SQLite"
        with self._one_writer:
            if self._bookkeeper is None:
                self._bookkeeper = self._open_bookkeeper()
            if self._loop_bookkeeper is None:  # opened here, on a thread, for `bookkeeping_here`
                # No busy timeout, and no checkpoint in its commits (a checkpoint copies
                # megabytes, and a progress handler does not stop it).
                self._loop_bookkeeper = self._open_bookkeeper("PRAGMA busy_timeout=0")
                quiet_checkpoints(self._loop_bookkeeper.driver_connection, self._loop_bookkeeper.info)
            if self.background_checkpoints:
                quiet_checkpoints(self._bookkeeper.driver_connection, self._bookkeeper.info)
            try:
                yield self._bookkeeper.cursor()
            except BaseException:
                if self._bookkeeper.dbapi_connection.in_transaction:
                    self._bookkeeper.rollback()
                raise

    @contextmanager
    def bookkeeping_here(self) -> Iterator[Any]:
        """`bookkeeping` on the calling thread (the event loop's), for statements that never wait.

        A delivery's lease and outcome are a few short statements; on a thread each costs a
        hop there and back, which took more CPU than the statements (`docs/benchmarks.md`).
        Here they run at once or not at all: `NotNowError` is raised, with whatever the block began
        rolled back, when another thread of this process holds the write lock (the intake's
        commit, a unit's), when SQLite is busy (another process writes: this connection's busy
        timeout is 0), or when a statement runs past `HERE_BUDGET_SECONDS` (SQLite's progress
        handler interrupts it, so a large queue never holds the event loop); and until the first
        `bookkeeping` on a thread has opened this path's connection (opening one can wait). The
        caller then does the same on a thread. Write the block as one transaction, from
        `BEGIN IMMEDIATE` to `commit_sqlite`, so that nothing of it outlives a `NotNowError`.
        """
        assert self._one_writer is not None, "bookkeeping_here() is for SQLite"
        if self._loop_bookkeeper is None:  # opening it could wait: `bookkeeping` does, on a thread
            raise NotNowError("the event loop's connection is not open yet")
        if not self._one_writer.acquire(blocking=False):
            raise NotNowError("another thread of this process holds the write lock")
        try:
            driver = self._loop_bookkeeper.driver_connection
            deadline, over_budget = time.perf_counter() + HERE_BUDGET_SECONDS, False

            def past_deadline() -> bool:
                nonlocal over_budget
                over_budget = time.perf_counter() > deadline
                return over_budget

            driver.set_progress_handler(past_deadline, HERE_PROGRESS_STEPS)
            try:
                yield self._loop_bookkeeper.cursor()
            except sqlite3.OperationalError as error:  # busy, or interrupted past the budget
                if driver.in_transaction:
                    driver.rollback()
                raise NotNowError(str(error), over_budget=over_budget) from error
            except BaseException:
                if driver.in_transaction:
                    driver.rollback()
                raise
            finally:
                driver.set_progress_handler(None, 0)
        finally:
            self._one_writer.release()

    @contextmanager
    def bookkeeping_postgres(self) -> Iterator[Any]:
        """PostgreSQL: a driver cursor for queue bookkeeping (leases, outcomes, run records), on
        a pool of connections with `synchronous_commit=off` for their whole session.

        As on SQLite (`bookkeeping`), these writes are redone rather than lost: a crash of the
        server can take the last few before the log reaches the disk, never one after a durable
        commit, which flushes everything before it. Set once per connection rather than with
        `SET LOCAL` in every transaction: one round trip to the server fewer each time.

        The connections autocommit: a statement is one round trip (no BEGIN, no COMMIT), so
        what belongs together is written as one statement (a claim's lease, an outcome and its
        run record). The event loop's own are `bookkeep_on_loop`'s.
        """
        assert not self.is_sqlite, "bookkeeping_postgres() is for PostgreSQL"
        if self._lazy is None:
            with self._lazy_opening:
                if self._lazy is None:
                    lazy = create_engine(self.url, pool_size=4, max_overflow=4)
                    event.listen(lazy, "connect", lazy_commits)
                    self._lazy = lazy
        connection = self._lazy.raw_connection()
        try:
            yield connection.cursor()
        finally:
            connection.close()  # back to the pool (rolled back if left open)

    async def open_connections(self, concurrency: int) -> None:
        """PostgreSQL: open, before any work comes, the connections that `concurrency` deliveries
        in flight use at once: as many in the engine's pool and in each of the event loop's two
        sets, never more than each holds (`docs/operating.md`, "PostgreSQL connections"), as a
        pool with a minimum size would. SQLite: nothing (a file opens in microseconds).

        Opened on first need instead, each cost its process about 5 ms of CPU in the middle of its
        first commands (`docs/benchmarks.md`). The pools keep what they opened: CPU paid once, at
        start; and a database that refuses connections is said at start, not at the first delivery."""
        if self.is_sqlite or concurrency < 1:
            return
        await off_loop(self._check_out_at_once, min(concurrency, self._pool_size))
        for durable in (True, False):
            await self._statements_on_loop(durable=durable).open(concurrency)

    def _check_out_at_once(self, count: int) -> None:
        """Have `count` connections open in the engine's pool: taken out together (each one
        opened if the pool has no idle one; the driver's errors as SQLAlchemy's), then handed
        back, where the pool keeps them."""
        with contextlib.ExitStack() as taken:
            for _ in range(count):
                taken.enter_context(self._driver_connection())

    def _open_bookkeeper(self, *pragmas: str) -> Any:
        """A pooled connection kept for bookkeeping: commits not waiting for the disk, and `pragmas`."""
        connection = self.engine.raw_connection()
        cursor = connection.cursor()
        for pragma in ("PRAGMA synchronous=NORMAL", *pragmas):
            cursor.execute(pragma)
        cursor.close()
        return connection

    @contextmanager
    def read(self, *, streamed: bool = False) -> Iterator[Connection]:
        """A read-only transaction (SQLite: one snapshot for the whole block).

        On PostgreSQL the statements run without BEGIN and COMMIT, each its own transaction:
        at READ COMMITTED, the only level railyard uses, each statement of a transaction takes
        a snapshot of its own anyway, so a read sees exactly what it would have, for two round
        trips to the server fewer (`docs/benchmarks.md`). `streamed`: rows read as they come
        (`yield_per`), through a server-side cursor, which PostgreSQL opens only in a transaction.
        """
        if self.is_sqlite or streamed:
            with self.engine.connect() as connection, connection.begin():
                yield connection
            return
        with self.engine.connect() as connection:
            connection = connection.execution_options(isolation_level="AUTOCOMMIT")
            yield connection

    @contextmanager
    def read_here(self) -> Iterator[Connection]:
        """SQLite: a read-only transaction on the calling thread, on connections of its own.

        For the event loop's reads: a read in WAL mode never waits for a writer, and runs in
        a few microseconds, while a hop to a thread and back costs 17 to 76 µs of CPU
        (`app.store.hops` to `asyncio.to_thread`, `docs/benchmarks.md`). The connections are
        not the pool's, so a read here never waits for a connection a unit on a thread holds
        (their number grows as reads overlap; four are kept), and SQLite is waited for at
        most `READ_HERE_BUSY_MS`. PostgreSQL reads stay on threads: each is a network round trip.
        """
        assert self.is_sqlite, "read_here() is for SQLite"
        if self._here is None:
            self._here = create_engine(
                self.url,
                # `timeout` bounds the wait while the connection opens, before the pragmas run.
                connect_args={"check_same_thread": False, "timeout": READ_HERE_BUSY_MS / 1000},
                pool_size=4,
                max_overflow=-1,
            )
            configure_sqlite(self._here, self, READ_HERE_BUSY_MS)
        with self._here.connect() as connection, connection.begin():
            yield connection

    def driver_sql(self, sql: str) -> str:
        """`sql` written with `?` placeholders, in the driver's own style."""
        return sql if self.is_sqlite else sql.replace("?", "%s")

    @contextmanager
    def driver_write(self) -> Iterator[Any]:
        """Writes on a pooled connection of the driver itself (`driver_sql` for its
        statements): on SQLite a write transaction, committed and fsynced when the block ends
        without error; on PostgreSQL each statement commits by itself (one round trip, no
        BEGIN or COMMIT). For the small writes every command makes (the outsider budget),
        where SQLAlchemy's execution cost 2.8 times this path's (0.54 ms of CPU against 0.19
        on PostgreSQL). Errors come out as SQLAlchemy's."""
        with self.writing(), self._driver_connection() as connection:
            cursor = connection.cursor()
            if self.is_sqlite:
                cursor.execute("BEGIN IMMEDIATE")
            yield cursor
            if self.is_sqlite:
                cursor.execute("COMMIT")

    @contextmanager
    def _driver_connection(self) -> Iterator[Any]:
        """A pooled connection of the driver itself, which on PostgreSQL autocommits (no BEGIN,
        COMMIT or ROLLBACK: one round trip a statement) and is handed back to the pool as it
        came. On an error SQLite's is rolled back, PostgreSQL's dropped (a fresh one rather
        than one in doubt); the driver's errors come out as SQLAlchemy's."""
        dbapi_error = self.engine.dialect.loaded_dbapi.Error
        try:
            connection = self.engine.raw_connection()
        except dbapi_error as error:  # the database cannot be reached: SQLAlchemy's error too
            raise DBAPIError.instance(None, None, error, dbapi_error) from error
        postgres = not self.is_sqlite
        try:
            if postgres:
                connection.dbapi_connection.autocommit = True  # type: ignore[union-attr]
            yield connection
        except BaseException as error:
            if postgres and isinstance(error, dbapi_error):
                connection.invalidate(error)
            elif not postgres:
                with contextlib.suppress(Exception):
                    connection.rollback()
            if isinstance(error, dbapi_error):
                raise DBAPIError.instance(None, None, error, dbapi_error) from error
            raise
        finally:
            if postgres and connection.dbapi_connection is not None:  # None: invalidated above
                try:
                    connection.dbapi_connection.autocommit = False
                except Exception:  # never hand the pool a connection that autocommits
                    connection.invalidate()
            connection.close()  # back to the pool

    def point_read(self, sql: str, parameters: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """The first row of one SELECT (`?` placeholders), on a pooled connection of the driver
        itself, or None.

        For the reads taken before every GitHub call (a rate-limit pause, a kept ETag): one
        statement needs no transaction of its own, and SQLAlchemy's execution around it costs
        3.6 times this path's on PostgreSQL (0.51 ms of CPU against 0.14, `docs/benchmarks.md`).
        The driver's errors come out as SQLAlchemy's, as they would from `read()`.
        """
        with self._driver_connection() as connection:
            cursor = connection.cursor()
            cursor.execute(self.driver_sql(sql), parameters)
            row = cursor.fetchone()
            cursor.close()
        return None if row is None else tuple(row)

    async def point_read_here(self, sql: str, parameters: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """`point_read` for the event loop, with no trip to a thread: on SQLite on the loop's
        own connections (`read_here`), on PostgreSQL through asyncio connections of its own
        (`app.store.loop_statements`)."""
        if not self.is_sqlite:
            return await self._statements_on_loop().first_row(self.driver_sql(sql), parameters)
        try:
            cursor = self._point_reader().execute(sql, parameters)
            try:
                row = cursor.fetchone()
            finally:
                cursor.close()  # the statement reset: its snapshot of the WAL let go
        except sqlite3.OperationalError:  # busy past READ_HERE_BUSY_MS: wait on a thread instead
            return await off_loop(self.point_read, sql, parameters)
        except sqlite3.Error as error:
            raise DBAPIError.instance(sql, parameters, error, sqlite3.Error) from error
        return None if row is None else tuple(row)

    def _point_reader(self) -> sqlite3.Connection:
        """SQLite: the calling thread's own connection for `point_read_here`, kept open. It
        autocommits, so a SELECT is its own read transaction, with no BEGIN, COMMIT or pool
        checkout around it (those took most of an ignored delivery's read)."""
        reader: sqlite3.Connection | None = getattr(self._point_readers, "connection", None)
        if reader is None:
            timeout = READ_HERE_BUSY_MS / 1000
            path = sqlite_path(self.url) or ":memory:"
            reader = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
            reader.execute("PRAGMA query_only=1")  # it bypasses the write lock: reads only
            self._point_readers.connection = reader
            self._opened_readers.append(reader)
        return reader

    async def select_here(self, statement: Select[Any], parameters: dict[str, Any]) -> list[tuple[Any, ...]]:
        """PostgreSQL: a SELECT's rows on `point_read_here`'s connections (`app.store.compiled`)."""
        assert not self.is_sqlite, "select_here() is for PostgreSQL"
        found = compiled_for(statement, self.engine.dialect)
        rows = await self._statements_on_loop().all_rows(found.sql, found.bound(parameters))
        return found.rows(rows) if len(rows) <= MANY_ROWS else await off_loop(found.rows, rows)

    async def write_here(self, sql: str, parameters: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """One write (`?` placeholders) committed by itself, durably, and the rows it returns
        (RETURNING): on PostgreSQL on the event loop, through asyncio connections of its own
        (`app.store.loop_statements`: no thread, no pool checkout); on SQLite on a thread
        (`driver_write`)."""
        if self.is_sqlite:
            return await off_loop(self._write_now, sql, parameters)
        return await self._statements_on_loop().all_rows(self.driver_sql(sql), parameters)

    def _write_now(self, sql: str, parameters: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self.driver_write() as cursor:
            cursor.execute(self.driver_sql(sql), parameters)
            return [tuple(row) for row in cursor.fetchall()] if cursor.description else []

    async def bookkeep_on_loop(self, statement: str, parameters: dict[str, Any]) -> list[tuple[Any, ...]]:
        """PostgreSQL: one bookkeeping statement (psycopg's placeholders) committed by itself on
        the event loop, and its rows; as `bookkeeping_postgres`, its commit does not wait for
        the log to reach the disk (`synchronous_commit=off`), so a crash can take the last few
        of them, which are then redone."""
        assert not self.is_sqlite, "bookkeep_on_loop() is for PostgreSQL"
        return await self._statements_on_loop(durable=False).all_rows(statement, parameters)

    def _statements_on_loop(self, *, durable: bool = True) -> LoopStatements:
        """The event loop's connections (PostgreSQL), opened when first needed: durable commits
        as the engine's (`configure_postgres`), or the bookkeeping's lazy ones."""
        if durable not in self._on_loop:
            from app.store.loop_statements import (
                LoopStatements,
            )  # here: SQLite's processes never load psycopg

            setting = ("SET synchronous_commit = on" if durable else "SET synchronous_commit = off",)
            self._on_loop[durable] = LoopStatements(self._driver_connect_args, setup=setting)
        return self._on_loop[durable]

    def _driver_connect_args(self) -> tuple[Any, dict[str, Any]]:
        """What the engine passes to `psycopg.connect`, without SQLAlchemy's own type adapters."""
        args, kwargs = self.engine.dialect.create_connect_args(self.engine.url)
        return args, {name: value for name, value in kwargs.items() if name != "context"}

    def ping(self) -> None:
        """One round trip: raises when the database cannot answer."""
        with self.read() as connection:
            connection.exec_driver_sql("SELECT 1")

    def has_schema(self) -> bool:
        """Whether the migrations have run (the tickets table exists)."""
        return inspect(self.engine).has_table("tickets")

    def migrate(self) -> None:
        """Bring the schema to the newest migration (idempotent)."""
        from alembic import command  # here: a process that never migrates (the intake's writer) skips it

        config = alembic_config(self.url)
        with self.engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")

    def close(self) -> None:
        """Close every pooled connection."""
        for kept in (self._bookkeeper, self._loop_bookkeeper):
            if kept is not None:
                kept.close()
        self._bookkeeper = self._loop_bookkeeper = None
        while self._opened_readers:
            self._opened_readers.pop().close()
        self._point_readers = threading.local()  # opened again if the database is used again
        for statements in self._on_loop.values():
            statements.close()
        for engine in (self._here, self._lazy):
            if engine is not None:
                engine.dispose()
        self.engine.dispose()
        if self._one_writer is not None:
            self._one_writer.close()


def insert_for(connection: Connection) -> Any:
    """The dialect's INSERT, which has `on_conflict_do_nothing` and `on_conflict_do_update`."""
    return dialect_insert(connection.dialect.name)


def dialect_insert(dialect: str) -> Any:
    """`insert_for` by the dialect's name, for statements built once per dialect."""
    return sqlite.insert if dialect == "sqlite" else postgresql.insert


def dialect_later(dialect: str) -> Any:
    """The SQL function giving the later of two times: `max` on SQLite, `greatest` on PostgreSQL."""
    return func.max if dialect == "sqlite" else func.greatest


def alembic_config(url: str) -> Config:
    """Alembic's configuration, pointing at the migrations shipped inside the package."""
    from alembic.config import Config  # here, as `command` in `migrate`

    config = Config()
    config.set_main_option("script_location", MIGRATIONS)
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config
