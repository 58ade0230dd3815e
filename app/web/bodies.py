"""Request bodies read under three bounds: a body that stalls or comes too slowly is dropped,
the bytes of all bodies being read at once are capped, and part of the cap is kept for small
bodies.

Without them a client could open a few uploads, send all but the last byte and wait: each one
holds its bytes for as long as it likes (eight 24 MB webhooks held 230 MB). Here a body that
sends nothing for `stall` seconds is dropped (408), and so is one not all there within `stall`
seconds plus one second per `rate` bytes it declares (the limit's, when it declares none): a
body trickled a byte at a time to stay under the stall limit is dropped all the same, so holding
bytes in flight takes sending them, at `rate` per body. A body that would take the bytes in
flight past `capacity` is refused (503, with Retry-After) before it is read further; bodies that
declare (or reach) `small` bytes or more share only `capacity - reserve`, so large slow uploads,
whoever sends them, cannot starve the ordinary webhooks and API commands, which are small. A
body cut off by its client (a hang-up, a half-close) is refused (400) like any bad input. A
refused request was never acknowledged, so nothing is lost: GitHub records a failed delivery
(railyard's recovery asks for it again), an API client retries with the same Idempotency-Key.
"""

from __future__ import annotations

import asyncio
from urllib.parse import parse_qs

from aiohttp import web
from aiohttp.web_protocol import RequestPayloadError

CHUNK = 64 * 1024
STALL_SECONDS = 15.0  # SPEC: a body that stalls is dropped within 15 s
IN_FLIGHT_BYTES = 64 * 1024 * 1024  # a little over two of GitHub's largest webhooks at once
MIN_BYTES_PER_SECOND = 1024 * 1024  # a body of n MB must be all there within n s + STALL_SECONDS
SMALL_BODY = 1024 * 1024  # most webhooks, every API command and form
SMALL_RESERVE = 16 * 1024 * 1024  # of IN_FLIGHT_BYTES, kept for bodies under SMALL_BODY


class BodyRefused(Exception):  # noqa: N818 - it is the answer, not a failure
    """The body was not read (or a form not taken): `status` (400, 408, 413 or 503) and why."""

    def __init__(self, status: int, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.retry_after = status, message, retry_after


class BodyBudget:
    """The bytes of the request bodies this process is reading, capped at `capacity`, of which
    `reserve` only bodies under `small` bytes may use; each body read within its deadline."""

    def __init__(
        self,
        capacity: int = IN_FLIGHT_BYTES,
        stall: float = STALL_SECONDS,
        *,
        rate: float = MIN_BYTES_PER_SECOND,
        small: int = SMALL_BODY,
        reserve: int = SMALL_RESERVE,
    ) -> None:
        self.capacity, self.stall, self.rate = capacity, stall, rate
        self.small, self.reserve = small, reserve
        self.in_flight = 0
        self.large_in_flight = 0  # of which bodies that declared, or reached, `small` bytes or more

    def body(self, request: web.Request, limit: int) -> _BodyRead:
        """`async with budget.body(request, limit) as body`: the body, at most `limit` bytes,
        counted against the cap until the block ends."""
        return _BodyRead(self, request, limit)

    async def _next(self, request: web.Request, left: float) -> bytes:
        try:
            return await asyncio.wait_for(request.content.read(CHUNK), min(self.stall, max(left, 0.0)))
        except TimeoutError:  # an OSError too: first
            if left <= self.stall:
                raise BodyRefused(408, "the body came too slowly: it was not all there in time") from None
            raise BodyRefused(408, f"the body stalled: nothing arrived for {self.stall:g} s") from None
        except CUT_OFF:
            raise _cut_off() from None

    def _take(self, size: int, *, large: bool, moving: bool = False) -> None:
        """Count `size` more bytes (`moving`: bytes already counted become a large body's)."""
        fits = moving or self.in_flight + size <= self.capacity
        if large:
            fits = fits and self.large_in_flight + size <= self.capacity - self.reserve
        if not fits:
            raise BodyRefused(503, "too many request bodies are being read at once; retry shortly", 5)
        if not moving:
            self.in_flight += size
        if large:
            self.large_in_flight += size


class _BodyRead:
    """One body read under a `BodyBudget` (a class rather than `asynccontextmanager`: every
    webhook goes through it, and a generator costs more to start and close)."""

    __slots__ = ("_budget", "_large", "_limit", "_request", "_taken")

    def __init__(self, budget: BodyBudget, request: web.Request, limit: int) -> None:
        self._budget, self._request, self._limit = budget, request, limit
        self._taken, self._large = 0, False

    async def __aenter__(self) -> bytes:
        try:
            return await self._read()
        except BaseException:
            self._release()
            raise

    async def __aexit__(self, *_: object) -> None:
        self._release()

    async def _read(self) -> bytes:
        budget, request, limit = self._budget, self._request, self._limit
        loop = asyncio.get_running_loop()
        chunks: list[bytes] = []
        declared = request.content_length
        if (declared or 0) > limit:
            raise _too_large(limit)
        expected = limit if declared is None else declared
        deadline = loop.time() + budget.stall + expected / budget.rate
        self._large = declared is not None and declared >= budget.small
        content = request.content
        while True:
            # What has already arrived is taken without a timer (a webhook's body usually
            # comes with its headers); only a body still on its way is waited for.
            try:
                chunk = content.read_nowait(CHUNK)
            except CUT_OFF:
                raise _cut_off() from None
            if not chunk:
                if content.at_eof():
                    break
                chunk = await budget._next(request, deadline - loop.time())
                if not chunk:
                    break
            if self._taken + len(chunk) > limit:
                raise _too_large(limit)
            if not self._large and self._taken + len(chunk) >= budget.small:  # a chunked body grew large
                budget._take(self._taken, large=True, moving=True)
                self._large = True
            budget._take(len(chunk), large=self._large)
            self._taken += len(chunk)
            chunks.append(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def _release(self) -> None:
        budget, taken = self._budget, self._taken
        self._taken = 0  # released once
        budget.in_flight -= taken
        if self._large:
            budget.large_in_flight -= taken


BODIES: web.AppKey[BodyBudget] = web.AppKey("bodies", BodyBudget)
FORM_BYTES = 4096  # a page's own form (the sign-out's CSRF token) is a few dozen bytes


async def small_form(request: web.Request) -> dict[str, str]:
    """A page's form, read under the app's body budget and at most FORM_BYTES (`BodyRefused`)."""
    bodies = request.app.get(BODIES) or BodyBudget()
    async with bodies.body(request, FORM_BYTES) as raw:
        try:
            fields = parse_qs(raw.decode("utf-8", errors="replace"), max_num_fields=20)
        except ValueError:  # more fields than any of railyard's forms has
            raise BodyRefused(400, "the form has more fields than this page sends") from None
    return {name: values[0] for name, values in fields.items()}


CUT_OFF = (OSError, RequestPayloadError)
"""What reading a body raises when its client hung up (or half-closed) before sending all of it,
or sent a body its own framing contradicts: bad input, refused like any other (logged
sparingly), never an unexpected error with a traceback for each such request."""


def _cut_off() -> BodyRefused:
    return BodyRefused(400, "the body ended before it was all there (the client hung up or misframed it)")


def _too_large(limit: int) -> BodyRefused:
    size = f"{limit // (1024 * 1024)} MB" if limit >= 1024 * 1024 else f"{limit // 1024} KB"
    return BodyRefused(413, f"the body is larger than {size}")
