"""The domain gauges of `/metrics`, read from the database at most once per `ttl_seconds`.

A scrape inside the window is answered from the last read (no statement at all); the read
itself is `app.store.domain_counts` (one statement per 500 tickets and one `GROUP BY`), so
scraping often costs the database nothing more.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from app.runtime.metrics import Metrics
from app.store.database import Database
from app.store.domain_counts import domain_counts
from handlers.ports import Clock

DEFAULT_TTL_SECONDS = 10.0


class DomainGauges:
    """Sets `Metrics.tickets`, `attention` and `invalidated` from the database, cached."""

    def __init__(
        self, database: Database, metrics: Metrics, clock: Clock, ttl_seconds: float = DEFAULT_TTL_SECONDS
    ) -> None:
        self.database, self.metrics, self.clock, self.ttl = database, metrics, clock, ttl_seconds
        self._read_at: float | None = None
        self._lock = asyncio.Lock()

    async def refresh(self) -> None:
        """Read the counts again if the last read is older than the window."""
        async with self._lock:  # concurrent scrapes wait for one read, not one each
            now = self.clock()
            if self._read_at is not None and now - self._read_at < self.ttl:
                return
            counts = await asyncio.to_thread(domain_counts, self.database, datetime.fromtimestamp(now, UTC))
            for state, count in counts.work.items():
                self.metrics.tickets.labels(state).set(count)
            for code, count in counts.attention.items():
                self.metrics.attention.labels(code).set(count)
            for reason, count in counts.invalidated.items():
                self.metrics.invalidated.labels(reason).set(count)
            self._read_at = now
