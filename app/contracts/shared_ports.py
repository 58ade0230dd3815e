"""The ports the GitHub client is given: where the per-installation limits and the GETs' ETags
are kept, and the metrics it counts into (the store and the runtime implement them)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Protocol

from prometheus_client import Counter, Gauge

# -- GitHub's per-installation limits ----------------------------------------------------


class Limits(Protocol):
    """Where the pause and the next write slot of each installation are kept."""

    async def paused_until(self, installation_id: int | None, now: float) -> float | None:
        """When the installation's pause lifts, if one is in force at `now`."""

    async def pause(self, installation_id: int | None, until: float) -> None:
        """GitHub said to wait until `until`: no call for this installation before then."""

    async def claim_write(self, installation_id: int, now: float, spacing: float) -> float | None:
        """Take the next content-write slot: None when taken (write now), else when to try again."""


class MemoryLimits:
    """The limits of one process, in memory (tests of the client alone)."""

    def __init__(self) -> None:
        self._paused: dict[int | None, float] = {}
        self._next_write: dict[int, float] = {}

    async def paused_until(self, installation_id: int | None, now: float) -> float | None:
        """When the installation's pause lifts, if one is in force at `now`."""
        until = self._paused.get(installation_id)
        return until if until is not None and until > now else None

    async def pause(self, installation_id: int | None, until: float) -> None:
        """GitHub said to wait until `until`."""
        self._paused[installation_id] = max(until, self._paused.get(installation_id, 0.0))

    async def claim_write(self, installation_id: int, now: float, spacing: float) -> float | None:
        """Take the next content-write slot, or say when it frees up."""
        allowed = self._next_write.get(installation_id, 0.0)
        if now < allowed:
            return allowed
        self._next_write[installation_id] = now + spacing
        return None


# -- the conditional-request cache ---------------------------------------------------------

MAX_ENTRY_BYTES = 512 * 1024  # a bigger answer (a large compare) is not worth a row


@dataclass(frozen=True)
class Cached:
    """A GET's answer as kept: its ETag and its raw body."""

    etag: str
    body: bytes


class HttpCache(Protocol):
    """The port the client's GET path uses."""

    async def get(self, scope: str, url: str) -> Cached | None:
        """The answer kept for this credential's scope and URL, if any."""

    async def put(self, scope: str, url: str, etag: str, body: bytes) -> None:
        """Keep (or replace) the answer for this scope and URL."""


def cache_key(scope: str, url: str) -> str:
    """The one key of an entry: a sha256 of method, URL and scope (fixed length for an index)."""
    return hashlib.sha256(f"GET {url} {scope}".encode()).hexdigest()


# -- metrics -----------------------------------------------------------------------------


class CallMetrics(Protocol):
    """What the GitHub client counts: its calls by outcome, the rate limit left per installation
    (`app.runtime.metrics.Metrics` is the one implementation)."""

    github_calls: Counter
    rate_limit_remaining: Gauge
