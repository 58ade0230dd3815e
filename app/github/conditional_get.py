"""Where the client keeps what GitHub answered to its GETs, for conditional requests.

A read sends back the ETag of the body it last got as `If-None-Match`; GitHub answers 304
(which counts against no rate limit) when nothing changed, and the body kept is used. Every
read still asks GitHub, so nothing is ever staler than without the cache.

Entries are keyed by the credential's scope and the URL (GET only): an installation's
answers never serve another installation or a user. A user token's scope is a sha256 of the
token (`token_scope`), never the token itself. `MemoryHttpCache` keeps one process's entries;
`app.store.http_cache.SharedHttpCache` keeps them in the database for every process.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping

import httpx

from app.contracts.shared_ports import MAX_ENTRY_BYTES, Cached, HttpCache, cache_key

__all__ = [
    "MAX_ENTRY_BYTES",
    "Cached",
    "HttpCache",
    "MemoryHttpCache",
    "TieredHttpCache",
    "cache_key",
    "conditional_get",
    "installation_scope",
    "token_scope",
]


async def conditional_get(
    cache: HttpCache,
    scope: str,
    url: str,
    send: Callable[[Mapping[str, str] | None], Awaitable[httpx.Response]],
) -> tuple[httpx.Response, Cached | None]:
    """Send a GET with the ETag kept for (scope, url) as If-None-Match, through `send(headers)`.

    Returns GitHub's response and, when it answered 304, the entry kept (whose body is the
    answer). A 200 with a new ETag for `url` itself (not a redirect's target) replaces it.
    """
    cached = await cache.get(scope, url)
    response = await send({"If-None-Match": cached.etag} if cached is not None else None)
    if response.status_code == 304 and cached is not None:
        return response, cached
    etag = response.headers.get("etag")
    asked = response.status_code == 200 and str(response.request.url) == url
    if etag and asked and (cached is None or cached.etag != etag):
        await cache.put(scope, url, etag, response.content)
    return response, None


def installation_scope(installation_id: int | None) -> str:
    """The scope of the app's own JWT (None) or of one installation's token."""
    return "app" if installation_id is None else f"installation:{installation_id}"


def token_scope(token: str) -> str:
    """The scope of a user's token: a sha256 of it, so the token itself is never stored."""
    return "user:" + hashlib.sha256(token.encode()).hexdigest()


class MemoryHttpCache:
    """One process's entries, the oldest written evicted beyond `max_rows` or `max_bytes`."""

    def __init__(self, max_rows: int = 2_000, max_bytes: int = 16 * 1024 * 1024) -> None:
        self.max_rows, self.max_bytes = max_rows, max_bytes
        self._entries: OrderedDict[str, Cached] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    async def get(self, scope: str, url: str) -> Cached | None:
        """The answer kept for this scope and URL, if any."""
        return self._entries.get(cache_key(scope, url))

    async def put(self, scope: str, url: str, etag: str, body: bytes) -> None:
        """Keep the answer, then evict the oldest beyond the bounds."""
        if len(body) > MAX_ENTRY_BYTES:
            return
        key = cache_key(scope, url)
        old = self._entries.pop(key, None)
        self._bytes += len(body) - (len(old.body) if old else 0)
        self._entries[key] = Cached(etag, body)
        while self._entries and (len(self._entries) > self.max_rows or self._bytes > self.max_bytes):
            _, gone = self._entries.popitem(last=False)
            self._bytes -= len(gone.body)


class TieredHttpCache:
    """This process's entries in front of the shared ones (`app.store.http_cache`): a read the
    process already made costs no database round trip, and every process still finds what any
    of them kept.

    An entry here may be older than the shared one (another process got a newer answer): its
    ETag then no longer matches, GitHub answers 200 with the new body, and both tiers take it.
    A stale entry costs one full answer, never a stale read.
    """

    def __init__(self, near: MemoryHttpCache, far: HttpCache) -> None:
        self.near, self.far = near, far

    async def get(self, scope: str, url: str) -> Cached | None:
        """The entry from this process's memory, else from the shared cache (then kept here)."""
        kept = await self.near.get(scope, url)
        if kept is not None:
            return kept
        kept = await self.far.get(scope, url)
        if kept is not None:
            await self.near.put(scope, url, kept.etag, kept.body)
        return kept

    async def put(self, scope: str, url: str, etag: str, body: bytes) -> None:
        """Keep the answer in both tiers."""
        await self.near.put(scope, url, etag, body)
        await self.far.put(scope, url, etag, body)
