"""GETs' ETags and bodies in the database (`http_cache`), shared by every railyard process.

`SharedHttpCache` is the `app.contracts.shared_ports.HttpCache` port over the database: one
primary-key read before a GET, one upsert when GitHub answers a new ETag. It is bounded:
`prune_http_cache` (run by housekeeping) evicts the oldest entries beyond a number of rows
and of bytes. A cache that cannot be read or written never fails the read it serves: the
GET is sent without `If-None-Match`, or its answer is simply not kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import structlog
from sqlalchemy import delete, func, select
from sqlalchemy.exc import SQLAlchemyError

from app.contracts.shared_ports import MAX_ENTRY_BYTES, Cached, cache_key
from app.settings import Settings
from app.store.database import Database
from app.store.tables import HttpCacheRow, table

log = structlog.get_logger(__name__)
http_cache = table(HttpCacheRow)
_READ = f"SELECT etag, body FROM {http_cache.name} WHERE key = ?"  # noqa: S608 - no input in it
_WRITE = (  # one upsert, on PostgreSQL on the event loop (`Database.write_here`)
    f"INSERT INTO {http_cache.name} (key, scope, url, etag, body, size, stored_at) "  # noqa: S608
    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET etag = excluded.etag, "
    "body = excluded.body, size = excluded.size, stored_at = excluded.stored_at"
)
MAX_ROWS = 20_000
MAX_BYTES = 64 * 1024 * 1024


class SharedHttpCache:
    """The conditional-request cache of every process on `database`."""

    def __init__(self, database: Database, clock: Callable[[], float] = time.time) -> None:
        self.database = database
        self._clock = clock

    async def get(self, scope: str, url: str) -> Cached | None:
        """The answer kept for this scope and URL, if any (None when the database will not say)."""
        try:
            row = await self.database.point_read_here(_READ, (cache_key(scope, url),))
        except SQLAlchemyError as error:
            log.warning("could not read the HTTP cache", error=type(error).__name__)
            return None
        return None if row is None else Cached(row[0], bytes(row[1]))

    async def put(self, scope: str, url: str, etag: str, body: bytes) -> None:
        """Keep (or replace) the answer for this scope and URL; a failure only loses the entry."""
        if len(body) > MAX_ENTRY_BYTES:
            return
        row = (cache_key(scope, url), scope, url, etag, body, len(body), self._clock())
        try:
            await self.database.write_here(_WRITE, row)
        except SQLAlchemyError as error:
            log.warning("could not write the HTTP cache", error=type(error).__name__)


def prune_http_cache(database: Database, max_rows: int = MAX_ROWS, max_bytes: int = MAX_BYTES) -> int:
    """Evict the oldest entries beyond `max_rows` rows or `max_bytes` of bodies; how many went."""
    with database.write() as connection:
        total_size = func.coalesce(func.sum(http_cache.c.size), 0)
        count, size = connection.execute(select(func.count(), total_size)).one()
        if count <= max_rows and size <= max_bytes:
            return 0
        newest_first = connection.execute(
            select(http_cache.c.key, http_cache.c.size).order_by(http_cache.c.stored_at.desc())
        ).all()
        kept = total = 0
        for _, entry_size in newest_first:
            if kept >= max_rows or total + entry_size > max_bytes:
                break
            kept, total = kept + 1, total + entry_size
        evicted = [key for key, _ in newest_first[kept:]]
        for start in range(0, len(evicted), 500):
            connection.execute(delete(http_cache).where(http_cache.c.key.in_(evicted[start : start + 500])))
    return len(evicted)


def http_cache_bounds(settings: Settings) -> tuple[int, int] | None:
    """The cache's bounds (rows, bytes) from the settings; None when it is off."""
    if settings.http_cache_max_rows == 0:
        return None
    return settings.http_cache_max_rows, int(settings.http_cache_max_mb * 1024 * 1024)


def shared_http_cache(settings: Settings, database: Database) -> SharedHttpCache | None:
    """The process's conditional-request cache, shared through the database (None when off)."""
    return SharedHttpCache(database) if http_cache_bounds(settings) is not None else None
