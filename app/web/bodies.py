"""Request bodies read under two bounds: a body that stalls is dropped, and the bytes of all
bodies being read at once are capped.

Without them a client could open a few uploads, send all but the last byte and wait: each one
holds its bytes for as long as it likes (eight 24 MB webhooks held 230 MB). Here a body that
sends nothing for `stall` seconds is dropped (408), and a body that would take the bytes in
flight past `capacity` is refused (503, with Retry-After) before it is read further. A refused
request was never acknowledged, so nothing is lost: GitHub records a failed delivery (railyard's
recovery asks for it again), an API client retries with the same Idempotency-Key.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import parse_qs

from aiohttp import web

CHUNK = 64 * 1024
STALL_SECONDS = 15.0  # SPEC: a body that stalls is dropped within 15 s
IN_FLIGHT_BYTES = 64 * 1024 * 1024  # a little over two of GitHub's largest webhooks at once


class BodyRefused(Exception):  # noqa: N818 - it is the answer, not a failure
    """The body was not read: `status` (408, 413 or 503) and a sentence saying why."""

    def __init__(self, status: int, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.retry_after = status, message, retry_after


class BodyBudget:
    """The bytes of the request bodies this process is reading, capped at `capacity`."""

    def __init__(self, capacity: int = IN_FLIGHT_BYTES, stall: float = STALL_SECONDS) -> None:
        self.capacity, self.stall = capacity, stall
        self.in_flight = 0

    @asynccontextmanager
    async def body(self, request: web.Request, limit: int) -> AsyncIterator[bytes]:
        """The body, at most `limit` bytes, counted against the cap until the block ends."""
        taken = 0
        try:
            chunks: list[bytes] = []
            if (request.content_length or 0) > limit:
                raise _too_large(limit)
            while True:
                chunk = await self._next(request)
                if not chunk:
                    break
                if taken + len(chunk) > limit:
                    raise _too_large(limit)
                self._take(len(chunk))
                taken += len(chunk)
                chunks.append(chunk)
            yield b"".join(chunks)
        finally:
            self.in_flight -= taken

    async def _next(self, request: web.Request) -> bytes:
        try:
            return await asyncio.wait_for(request.content.read(CHUNK), self.stall)
        except TimeoutError:
            raise BodyRefused(408, f"the body stalled: nothing arrived for {self.stall:g} s") from None

    def _take(self, size: int) -> None:
        if self.in_flight + size > self.capacity:
            raise BodyRefused(503, "too many request bodies are being read at once; retry shortly", 5)
        self.in_flight += size


BODIES: web.AppKey[BodyBudget] = web.AppKey("bodies", BodyBudget)
FORM_BYTES = 4096  # a page's own form (the sign-out's CSRF token) is a few dozen bytes


async def small_form(request: web.Request) -> dict[str, str]:
    """A page's form, read under the app's body budget and at most FORM_BYTES (`BodyRefused`)."""
    bodies = request.app.get(BODIES) or BodyBudget()
    async with bodies.body(request, FORM_BYTES) as raw:
        fields = parse_qs(raw.decode("utf-8", errors="replace"), max_num_fields=20)
    return {name: values[0] for name, values in fields.items()}


def _too_large(limit: int) -> BodyRefused:
    size = f"{limit // (1024 * 1024)} MB" if limit >= 1024 * 1024 else f"{limit // 1024} KB"
    return BodyRefused(413, f"the body is larger than {size}")
