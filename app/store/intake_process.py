"""The intake's writer as a process of its own (SQLite): group commit without the server's
interpreter lock.

In the server's process, the writer thread and the event loop share one interpreter lock:
after each commit the thread waits for the lock to hand the outcome back, and the commit's
p50 under a flood was 0.75 to 0.83 ms against 0.28 ms for the same commit in a process of its
own (`docs/benchmarks.md`). Every open connection waits for its delivery's commit, so that
wait is the intake's rate. So on SQLite `railyard serve` starts `python -m
app.store.intake_child`, hands it one end of a socket pair, and sends it each delivery whose
signature it verified, body unread; the child reads each body (`row_of`), commits whatever has
arrived while the last commit was being fsynced (the same `write_batch`, `synchronous=FULL`,
under the same cross-process `WriteLock`), answers one outcome per delivery (with the row's
status, or the 400's reason for a body that is not a JSON object), and takes the WAL
checkpoints (`WalCheckpointer`, which needs the writer's lock). Nothing is acknowledged before
the child says it is committed. The wire is described in `app.store.intake_child`.

If the child cannot be started, or dies, the server's stores fail over to the writer thread
(`DeliveryWriter`, which then takes the checkpoints) for the rest of the process's life, and
says so in the log and in `/healthz`; deliveries the child had not answered fail with 503 (one
it had committed is then answered 200 when GitHub sends it again).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import socket
import subprocess
import sys
import time
from typing import NamedTuple

import orjson
import structlog

from app.contracts.webhook_payloads import UnreadableBody
from app.store.database import Database
from app.store.intake import (
    STORE_TIMEOUT,
    DeliveryWriter,
    Received,
    Saturation,
    Stored,
    StoreTimeoutError,
    log_late_commit,
)
from app.store.intake_child import (
    ANSWER,
    FAILED,
    FRAME,
    READY,
    SOCKET_BUFFER,
    STATUSES,
    STORED,
    UNREADABLE,
)

log = structlog.get_logger(__name__)

START_WAIT = 15.0
"""Seconds `start` waits for the child to say it is ready, before writing in this process instead."""
MAX_UNANSWERED = 4096
MAX_UNANSWERED_BYTES = 256 * 1024 * 1024
"""Deliveries (and bytes of them) sent to the child and not answered yet, beyond which a store
fails at once (503): a child slow to answer holds no more of the server's memory than this."""
STUCK_AFTER = 2
"""Timeouts (`STORE_TIMEOUT` each) with no answer at all from the child, after which it is taken
for stuck: killed, and the stores go over to the writer thread."""
CLOSE_WAIT = 10.0
"""Seconds `close` waits for the child to write what it was sent and stop, before killing it."""


_PASSED_ON = frozenset({"PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "VIRTUAL_ENV"})
"""The only variables the writer process gets (and PYTHON*): none of the app's secrets."""


def _environment(database_url: str) -> dict[str, str]:
    passed = {
        name: value for name, value in os.environ.items() if name in _PASSED_ON or name.startswith("PYTHON")
    }
    # The server's level as configured (LOG_LEVEL, .env or its default), not the raw variable.
    level = logging.getLevelName(logging.getLogger().getEffectiveLevel()).lower()
    return {**passed, "LOG_LEVEL": level, "RAILYARD_INTAKE_DATABASE": database_url}


class IntakeWriteError(Exception):
    """The writer process could not commit the delivery (it logged why), or went away first."""


def _metadata(received: Received) -> bytes:
    """A delivery's fields as a JSON array, in order."""
    return orjson.dumps(tuple(received))


class _Sent(NamedTuple):
    """A delivery sent to the child, until it answers: what the server keeps of it."""

    delivery_id: str
    event: str
    future: asyncio.Future[Stored]
    sent_at: float  # monotonic
    size: int  # bytes of its frame


class _Answers(asyncio.Protocol):
    """The parent's end of the socket: reads the child's answers and settles the stores."""

    def __init__(self, writer: ProcessDeliveryWriter) -> None:
        self._writer = writer
        self._buffer = bytearray()

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        buffer, position, end = self._buffer, 0, len(self._buffer)
        self._writer._answered_at = time.monotonic()
        while end - position >= ANSWER.size:
            token, outcome, status, length = ANSWER.unpack_from(buffer, position)
            after = position + ANSWER.size + length
            if after > end:
                break
            reason = buffer[position + ANSWER.size : after].decode(errors="replace") if length else None
            position = after
            self._settle(token, outcome, status, reason)
        del buffer[:position]

    def _settle(self, token: int, outcome: int, status: int, reason: str | None) -> None:
        if outcome == READY:
            ready = self._writer._ready
            if ready is not None and not ready.done():
                ready.set_result(None)
            return
        sent = self._writer._waiting_for.pop(token, None)
        if sent is None:
            return
        self._writer._unanswered_bytes -= sent.size
        future = sent.future
        if future.done():  # timed out meanwhile: it was stored all the same
            if outcome == STORED and not future.cancelled():
                log_late_commit(sent.delivery_id, sent.event, future)
        elif outcome == FAILED:
            future.set_exception(IntakeWriteError("the intake's writer process could not commit it"))
        elif outcome == UNREADABLE:
            future.set_exception(UnreadableBody(reason or "body is not JSON"))
        else:
            future.set_result(Stored(outcome == STORED, STATUSES[status], reason))

    def connection_lost(self, error: Exception | None) -> None:
        self._writer._lost(error)


class ProcessDeliveryWriter:
    """`DeliveryWriter`'s interface (start, store, saturated, close) over a writer process."""

    def __init__(self, database: Database, *, timeout: float = STORE_TIMEOUT) -> None:
        self._database = database
        self._timeout = timeout
        self._tokens = itertools.count(1)
        self._waiting_for: dict[int, _Sent] = {}
        self._unanswered_bytes = 0
        self._answered_at = 0.0  # monotonic time of the child's last answer
        self._outgoing: list[bytes] = []  # frames queued for the next send
        self._eof = False  # our end is closed for writing
        self._saturation = Saturation()
        self._transport: asyncio.Transport | None = None
        self._child: subprocess.Popen[bytes] | None = None
        self._fallback: DeliveryWriter | None = None
        self._closing = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready: asyncio.Future[None] | None = None

    @property
    def in_process(self) -> bool:
        """Whether the stores went over to the writer thread (the child could not run)."""
        return self._fallback is not None

    async def start(self) -> None:
        """Start the writer process and wait until it is ready (its database connection open),
        or the writer thread when it cannot be started or is not ready within `START_WAIT`."""
        self._loop = asyncio.get_running_loop()
        ready = self._ready = self._loop.create_future()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            for end in (ours, theirs):
                with contextlib.suppress(OSError):  # a system that refuses keeps its default
                    end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER)
                    end.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_BUFFER)
            command = [sys.executable, "-m", "app.store.intake_child", str(theirs.fileno())]
            self._child = subprocess.Popen(  # noqa: S603 - our own module, no shell
                command, pass_fds=(theirs.fileno(),), env=_environment(self._database.url)
            )
        except OSError as error:
            ours.close()
            log.error("could not start the intake's writer process; writing here", error=str(error))
            await self._fall_back()
            return
        finally:
            theirs.close()
        self._database.background_checkpoints = True  # the child takes them
        self._transport, _ = await self._loop.create_unix_connection(lambda: _Answers(self), sock=ours)
        try:
            await asyncio.wait_for(asyncio.shield(ready), START_WAIT)
        except (TimeoutError, IntakeWriteError) as error:
            log.error("the intake's writer process did not start; writing here", error=str(error))
            self._closing = True  # no second fall-back from `_lost`
            await self._stop_child()
            self._closing = False
            await self._fall_back()

    async def store_body(self, received: Received, body: bytes) -> Stored:
        """Have the child read the body and store it durably: what it came to.

        Raises `UnreadableBody` when the body is not a JSON object (nothing was stored),
        `StoreTimeoutError` when the commit does not come within the timeout, and
        `IntakeWriteError` when the writer process could not commit it.
        """
        if self._fallback is not None:
            return await self._fallback.store_body(received, body)
        if self._closing:
            raise RuntimeError("intake is shutting down")
        if self._loop is None:
            raise RuntimeError("intake writer not started")
        if self._transport is None:  # the child went away; the writer thread is starting
            raise IntakeWriteError("the intake's writer process went away")
        if len(self._waiting_for) >= MAX_UNANSWERED or self._unanswered_bytes >= MAX_UNANSWERED_BYTES:
            raise IntakeWriteError("too many deliveries already wait for the writer process")
        token = next(self._tokens)
        metadata = _metadata(received)  # before anything is kept: a delivery it refuses leaves nothing
        size = FRAME.size + len(metadata) + len(body)
        header = FRAME.pack(size, len(metadata), token)
        future: asyncio.Future[Stored] = self._loop.create_future()
        self._waiting_for[token] = _Sent(received.delivery_id, received.event, future, time.monotonic(), size)
        self._unanswered_bytes += size
        self._outgoing += (header, metadata, body)
        if len(self._outgoing) == 3:  # the first since the last send: send once the loop is done
            self._loop.call_soon(self._send)
        timer = self._loop.call_later(self._timeout, self._give_up, future, received.delivery_id)
        return await self._saturation.answer(future, timer)

    def _send(self) -> None:
        """Send the frames the stores of this turn of the event loop queued, in one write (a
        write per delivery cost more than a tenth of the loop's time under a flood)."""
        outgoing, self._outgoing = self._outgoing, []
        if outgoing and self._transport is not None and not self._eof:
            self._transport.writelines(outgoing)

    def saturated(self) -> bool:
        """Whether the intake is flooded (`Saturation`)."""
        if self._fallback is not None:
            return self._fallback.saturated()
        return self._saturation()

    def describe(self) -> str:
        """Where the commits happen, for `/healthz`: the writer process, or the thread it failed over to."""
        return "process" if self._fallback is None else "thread (the writer process could not run)"

    def _give_up(self, future: asyncio.Future[Stored], delivery_id: str) -> None:
        if not future.done():  # sent: the child may still commit it (logged when it answers)
            future.set_exception(StoreTimeoutError(self._timeout, delivery_id, withdrawn=False))
        self._unless_stuck()

    def _unless_stuck(self) -> None:
        """Kill a child that answered nothing for `STUCK_AFTER` timeouts while a delivery waited
        (its end then closes, and `_lost` hands the stores over to the writer thread)."""
        oldest = next(iter(self._waiting_for.values()), None)
        if oldest is None or self._child is None or self._closing:
            return
        sent_at, now = oldest.sent_at, time.monotonic()
        if self._answered_at < sent_at and now - sent_at >= STUCK_AFTER * self._timeout:
            log.error(
                "the intake's writer process answered nothing for too long; stopping it",
                waited_seconds=round(now - sent_at, 1),
                unanswered=len(self._waiting_for),
            )
            with contextlib.suppress(OSError):
                self._child.kill()

    def _lost(self, error: Exception | None) -> None:
        """The child's end closed: fail what it had not answered; past a stop, go over to the thread."""
        self._transport = None
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(IntakeWriteError("the intake's writer process went away"))
        waiting, self._waiting_for = self._waiting_for, {}
        self._unanswered_bytes = 0
        for future in (sent.future for sent in waiting.values()):
            if not future.done():
                future.set_exception(IntakeWriteError("the intake's writer process went away"))
        if not self._closing and self._loop is not None:
            log.error(
                "the intake's writer process went away; writing in this process from now on",
                unanswered=len(waiting),
                error=str(error) if error else None,
            )
            self._loop.create_task(self._fall_back())

    async def _fall_back(self) -> None:
        if self._fallback is not None:
            return
        fallback = DeliveryWriter(self._database)
        await fallback.start()
        self._fallback = fallback
        child, self._child = self._child, None
        if child is not None:  # reaped, so no zombie is left for the life of the server
            with contextlib.suppress(OSError):
                child.kill()
            returncode = await asyncio.to_thread(child.wait)
            log.info("the intake's writer process ended", returncode=returncode)

    async def close(self) -> None:
        """Let the child write what it was sent and stop; then stop the writer thread, if any."""
        self._closing = True
        await self._stop_child()
        if self._fallback is not None:
            await self._fallback.close()

    async def _stop_child(self) -> None:
        """Close our end for writing (the child writes what it read, then exits), wait, reap."""
        self._send()  # what this turn of the loop queued goes first
        if self._transport is not None:
            with contextlib.suppress(OSError, RuntimeError):
                if self._transport.can_write_eof():
                    self._transport.write_eof()
                    self._eof = True
        child, self._child = self._child, None
        if child is not None:
            try:
                await asyncio.wait_for(asyncio.to_thread(child.wait), CLOSE_WAIT)
            except TimeoutError:
                log.error("the intake's writer process did not stop; killing it")
                child.kill()
                await asyncio.to_thread(child.wait)
        if self._transport is not None:
            self._transport.close()
            self._transport = None
