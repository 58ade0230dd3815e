"""The intake's writer as a process of its own (SQLite): group commit without the server's
interpreter lock.

In the server's process, the writer thread and the event loop share one interpreter lock:
after each commit the thread waits for the lock to hand the outcome back, and the commit's
p50 under a flood was 0.75 to 0.83 ms against 0.28 ms for the same commit in a process of its
own (`docs/benchmarks.md`). Every open connection waits for its delivery's commit, so that
wait is the intake's rate. So on SQLite `railyard serve` starts `python -m
app.store.intake_process`, hands it one end of a socket pair, and sends it each verified
delivery; the child commits whatever has arrived while the last commit was being fsynced (the
same `write_batch`, `synchronous=FULL`, under the same cross-process `WriteLock`), answers one
outcome per delivery, and takes the WAL checkpoints (`WalCheckpointer`, which needs the
writer's lock). Nothing is acknowledged before the child says it is committed.

The wire: each delivery is a frame `<IIQ` (frame length, metadata length, token), the
metadata (the delivery's fields but the payload, as JSON), then the payload's bytes as GitHub
sent them; each answer is `<QB` (token, STORED / ALREADY_STORED / FAILED). The child exits when
its end of the socket closes (the server stops, or dies): it writes what it read first.

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
import signal
import socket
import struct
import subprocess
import sys
import time
from typing import Any, NamedTuple

import orjson
import structlog

from app.store.checkpoints import WalCheckpointer
from app.store.database import Database
from app.store.intake import (
    STORE_TIMEOUT,
    DeliveryWriter,
    IncomingDelivery,
    Saturation,
    StoreTimeoutError,
    discard,
    log_late_commit,
    write_batch,
    writer_connection,
)

log = structlog.get_logger(__name__)

FRAME = struct.Struct("<IIQ")  # frame length (header included), metadata length, token
ANSWER = struct.Struct("<QB")  # token, outcome
STORED, ALREADY_STORED, FAILED, READY = 1, 0, 2, 3
"""Outcomes; READY (token 0) is the child's first answer: its connection to the database is open."""
SOCKET_BUFFER = 4 * 1024 * 1024
"""Bytes each end of the socket pair buffers: a flood's worth of 13 KB deliveries in flight."""
MAX_BATCH = 256
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


_PAYLOAD = IncomingDelivery._fields.index("payload")


def _metadata(delivery: IncomingDelivery) -> bytes:
    """The delivery's fields but the payload, in order, as a JSON array."""
    return orjson.dumps(delivery[:_PAYLOAD] + delivery[_PAYLOAD + 1 :])


class _Sent(NamedTuple):
    """A delivery sent to the child, until it answers: what the server keeps of it."""

    delivery_id: str
    event: str
    future: asyncio.Future[bool]
    sent_at: float  # monotonic
    size: int  # bytes of its frame


class _Answers(asyncio.Protocol):
    """The parent's end of the socket: reads the child's answers and settles the stores."""

    def __init__(self, writer: ProcessDeliveryWriter) -> None:
        self._writer = writer
        self._buffer = bytearray()

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        whole = len(self._buffer) - len(self._buffer) % ANSWER.size
        waiting = self._writer._waiting_for
        self._writer._answered_at = time.monotonic()
        for token, outcome in ANSWER.iter_unpack(memoryview(self._buffer)[:whole]):
            if outcome == READY:
                ready = self._writer._ready
                if ready is not None and not ready.done():
                    ready.set_result(None)
                continue
            sent = waiting.pop(token, None)
            if sent is None:
                continue
            self._writer._unanswered_bytes -= sent.size
            future = sent.future
            if future.done():  # timed out meanwhile: it was stored all the same
                if outcome == STORED and not future.cancelled():
                    log_late_commit(sent.delivery_id, sent.event, future)
                continue
            if outcome == FAILED:
                future.set_exception(IntakeWriteError("the intake's writer process could not commit it"))
            else:
                future.set_result(outcome == STORED)
        del self._buffer[:whole]

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
            command = [sys.executable, "-m", "app.store.intake_process", str(theirs.fileno())]
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

    async def store(self, delivery: IncomingDelivery) -> bool:
        """Store durably; True if new, False if this delivery id was already stored.

        Raises `StoreTimeoutError` when the commit does not come within the timeout, and
        `IntakeWriteError` when the writer process could not commit it.
        """
        if self._fallback is not None:
            return await self._fallback.store(delivery)
        if self._closing:
            raise RuntimeError("intake is shutting down")
        if self._loop is None:
            raise RuntimeError("intake writer not started")
        if self._transport is None:  # the child went away; the writer thread is starting
            raise IntakeWriteError("the intake's writer process went away")
        if len(self._waiting_for) >= MAX_UNANSWERED or self._unanswered_bytes >= MAX_UNANSWERED_BYTES:
            raise IntakeWriteError("too many deliveries already wait for the writer process")
        token = next(self._tokens)
        metadata = _metadata(delivery)  # before anything is kept: a delivery it refuses leaves nothing
        payload = delivery.payload.encode()
        size = FRAME.size + len(metadata) + len(payload)
        header = FRAME.pack(size, len(metadata), token)
        future: asyncio.Future[bool] = self._loop.create_future()
        self._waiting_for[token] = _Sent(delivery.delivery_id, delivery.event, future, time.monotonic(), size)
        self._unanswered_bytes += size
        self._outgoing += (header, metadata, payload)
        if len(self._outgoing) == 3:  # the first since the last send: send once the loop is done
            self._loop.call_soon(self._send)
        timer = self._loop.call_later(self._timeout, self._give_up, future, delivery)
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

    def _give_up(self, future: asyncio.Future[bool], delivery: IncomingDelivery) -> None:
        if not future.done():  # sent: the child may still commit it (logged when it answers)
            future.set_exception(StoreTimeoutError(self._timeout, delivery.delivery_id, withdrawn=False))
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


# The child.


def _frames(
    buffer: bytearray, limit: int = MAX_BATCH, start: int = 0, end: int | None = None
) -> tuple[list[tuple[int, IncomingDelivery]], int]:
    """The whole frames in `buffer[start:end]` from its start (at most `limit`), and how many
    bytes they take."""
    frames: list[tuple[int, IncomingDelivery]] = []
    position, end = start, len(buffer) if end is None else end
    with memoryview(buffer) as view:
        while end - position >= FRAME.size and len(frames) < limit:
            length, metadata_length, token = FRAME.unpack_from(buffer, position)
            if end - position < length:
                break
            first = position + FRAME.size
            fields = orjson.loads(view[first : first + metadata_length])
            payload = str(view[first + metadata_length : position + length], "utf-8")
            fields.insert(_PAYLOAD, payload)
            frames.append((token, IncomingDelivery(*fields)))
            position += length
    return frames, position - start


class _Inbox:
    """What the child read from the server and has not committed yet, in one buffer kept for
    the process's life.

    A fresh 4 MB buffer for each read (`recv`) cost nine page faults a 13 KB delivery, most
    of the child's system time under a flood. Here a torn frame moves to the front when the
    space behind runs out; the buffer grows only for a frame larger than it (up to 25 MB).
    """

    def __init__(self, capacity: int = SOCKET_BUFFER) -> None:
        self._capacity = capacity
        self._buffer = bytearray(capacity)
        self._start = 0  # the first byte not taken as a frame yet
        self._end = 0  # the end of what was read

    def receive(self, channel: socket.socket, wait: bool) -> bool | None:
        """Read what has arrived (waiting for it if `wait`): False once the other end closed,
        None when nothing was read (nothing was there, or the whole frames read come first)."""
        if not self._make_room():
            return None
        try:
            with memoryview(self._buffer) as view:
                count = channel.recv_into(view[self._end :], 0, 0 if wait else socket.MSG_DONTWAIT)
        except BlockingIOError:
            return None
        self._end += count
        return count > 0

    def _make_room(self) -> bool:
        """Whether there is room behind what was read (made if a torn frame needs it)."""
        if self._start == self._end:
            self._start = self._end = 0
            if len(self._buffer) > self._capacity:  # a large delivery's room is given back
                self._buffer = bytearray(self._capacity)
        if self._end < len(self._buffer):
            return True
        if self.has_whole_frame():  # full: those are taken first
            return False
        left = self._end - self._start
        if self._start > 0:  # a torn frame at the end: to the front
            self._buffer[:left] = self._buffer[self._start : self._end]
            self._start, self._end = 0, left
        length = self._whole_length()
        if length > len(self._buffer):  # a frame larger than the buffer
            self._buffer.extend(bytes(length - len(self._buffer)))
        return True

    def _whole_length(self) -> int:
        left = self._end - self._start
        return int(FRAME.unpack_from(self._buffer, self._start)[0]) if left >= FRAME.size else 0

    def has_whole_frame(self) -> bool:
        left = self._end - self._start
        return left >= FRAME.size and left >= self._whole_length()

    def frames(self, limit: int = MAX_BATCH) -> list[tuple[int, IncomingDelivery]]:
        """The whole frames read (at most `limit`), taken out of the inbox."""
        frames, used = _frames(self._buffer, limit, self._start, self._end)
        self._start += used
        return frames


_Frames = list[tuple[int, IncomingDelivery]]


def _commit(database: Database, connection: Any, frames: _Frames) -> tuple[bytes, Any]:
    """Commit a batch; the answers to send, and the connection to use next (None after a failure,
    opened again for the next batch)."""
    try:
        if connection is None:
            connection = writer_connection(database)
        stored = write_batch(database, [delivery for _, delivery in frames], connection)
    except Exception as error:  # the deliveries answer 503; nothing was acknowledged
        log.error("the intake could not commit a batch", error=type(error).__name__, detail=str(error)[:200])
        if connection is not None:
            discard(connection)
        return b"".join(ANSWER.pack(token, FAILED) for token, _ in frames), None
    tokens = (token for token, _ in frames)
    outcomes = (STORED if new else ALREADY_STORED for new in stored)
    return b"".join(ANSWER.pack(*answer) for answer in zip(tokens, outcomes, strict=True)), connection


def serve(channel: socket.socket, database: Database) -> None:
    """Read deliveries until the other end closes; commit each batch that has arrived, answer it.

    A batch is what one read finds in the socket: everything sent while the last commit ran
    (at most `MAX_BATCH`; the rest is the next batch). The read waits only when no whole
    delivery is left over.
    """
    connection: Any = writer_connection(database)
    channel.sendall(ANSWER.pack(0, READY))
    checkpoints = WalCheckpointer(database)
    checkpoints.start()
    inbox = _Inbox()
    open_ = True
    try:
        while True:
            if open_:
                received = inbox.receive(channel, wait=not inbox.has_whole_frame())
                open_ = received is not False
            frames = inbox.frames()
            if not frames:
                if not open_:
                    break  # a torn frame at the end: the server stopped mid-send, nothing to answer
                continue
            answers, connection = _commit(database, connection, frames)
            with contextlib.suppress(OSError):  # the server went away: its stores are failed there
                channel.sendall(answers)
    finally:
        if connection is not None:
            connection.close()
        checkpoints.close()


def main() -> None:
    """`python -m app.store.intake_process FD`, started by `ProcessDeliveryWriter.start`."""
    from app.logs import configure_logging

    configure_logging(os.environ.get("LOG_LEVEL", "info"))
    # A Ctrl-C or a service manager's SIGTERM reaches the whole group: the server then stops,
    # and its end of the socket closing is what stops this process, once it has written
    # what it was sent (a server that dies closes it too).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    channel = socket.socket(fileno=int(sys.argv[1]))
    database = Database(os.environ["RAILYARD_INTAKE_DATABASE"], pool_size=2)
    started = time.monotonic()
    try:
        serve(channel, database)
    except Exception:  # logged as a JSON line like the server's; the server falls back
        log.exception("the intake's writer process failed")
        sys.exit(1)
    finally:
        channel.close()
        database.close()
    log.debug("intake writer process stopped", ran_seconds=round(time.monotonic() - started, 1))


if __name__ == "__main__":
    main()
