"""The intake's writer process (SQLite): `python -m app.store.intake_child FD`, started by
`app.store.intake_process.ProcessDeliveryWriter`, whose docstring tells why it exists.

It reads each delivery the server verified (its signature checked there), reads its body
(`row_of`: the facts stored beside it, the shape of its event), commits what has arrived while
the last commit was being fsynced, and answers each delivery once. Reading the bodies here, not in
the server, takes a quarter of the server's own work per webhook off its core (`docs/
benchmarks.md`, eighth round).

The wire, both ways over one socket pair:
- a delivery is a frame `<IIQ` (frame length, metadata length, token), the metadata (the
  `Received` as a JSON array), then the body's bytes as GitHub sent them;
- an answer is `<QBBH` (token, outcome, status, reason length) and the reason's UTF-8 bytes:
  the outcome STORED, ALREADY_STORED, FAILED (nothing was written; it logged why) or UNREADABLE
  (not a JSON object: the reason is the 400's sentence, nothing was written); the status is
  the stored row's (`STATUSES`), and a rejected row's reason says what its body lacks or
  carries. READY (token 0) is the first answer: the database connection is open.

It exits when its end of the socket closes (the server stops, or dies), once it has written
what it read first.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import struct
import sys
import time
from typing import Any

import orjson
import structlog

from app.contracts.webhook_payloads import UnreadableBody
from app.store.checkpoints import WalCheckpointer
from app.store.database import Database
from app.store.delivery_status import IGNORED, PENDING, REJECTED
from app.store.intake import IncomingDelivery, Received, discard, row_of, write_batch, writer_connection

log = structlog.get_logger(__name__)

FRAME = struct.Struct("<IIQ")  # frame length (header included), metadata length, token
ANSWER = struct.Struct("<QBBH")  # token, outcome, status, reason length
STORED, ALREADY_STORED, FAILED, READY, UNREADABLE = 1, 0, 2, 3, 4
STATUSES = (PENDING, IGNORED, REJECTED)
"""A stored row's status, by its number on the wire."""
SOCKET_BUFFER = 4 * 1024 * 1024
"""Bytes each end of the socket pair buffers: a flood's worth of 13 KB deliveries in flight."""
MAX_BATCH = 256
MAX_REASON = 1024
"""Bytes of a reason sent at most (a rejected body's names the event and a path)."""


def answer(token: int, outcome: int, status: int = 0, reason: str | None = None) -> bytes:
    """One answer on the wire."""
    said = reason.encode()[:MAX_REASON].decode("utf-8", "ignore").encode() if reason else b""
    return ANSWER.pack(token, outcome, status, len(said)) + said


_Frames = list[tuple[int, Received, bytes]]
_Rows = list[tuple[int, IncomingDelivery]]


def _frames(
    buffer: bytearray, limit: int = MAX_BATCH, start: int = 0, end: int | None = None
) -> tuple[_Frames, int]:
    """The whole frames in `buffer[start:end]` from its start (at most `limit`), and how many
    bytes they take."""
    frames: _Frames = []
    position, end = start, len(buffer) if end is None else end
    with memoryview(buffer) as view:
        while end - position >= FRAME.size and len(frames) < limit:
            length, metadata_length, token = FRAME.unpack_from(buffer, position)
            if end - position < length:
                break
            first = position + FRAME.size
            received = Received(*orjson.loads(view[first : first + metadata_length]))
            frames.append((token, received, bytes(view[first + metadata_length : position + length])))
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

    def frames(self, limit: int = MAX_BATCH) -> _Frames:
        """The whole frames read (at most `limit`), taken out of the inbox."""
        frames, used = _frames(self._buffer, limit, self._start, self._end)
        self._start += used
        return frames


def _rows(frames: _Frames) -> tuple[_Rows, list[bytes]]:
    """Each frame's row, and the answers of those that have none: unreadable bodies (a 400),
    and a body whose reading failed some other way (logged; it answers 503, the rest go on)."""
    rows: _Rows = []
    answers: list[bytes] = []
    for token, received, body in frames:
        try:
            rows.append((token, row_of(received, body)))
        except UnreadableBody as unreadable:
            answers.append(answer(token, UNREADABLE, reason=str(unreadable)))
        except Exception as error:
            log.error(
                "the intake could not read a delivery", delivery_id=received.delivery_id, exc_info=error
            )
            answers.append(answer(token, FAILED))
    return rows, answers


def _commit(database: Database, connection: Any, rows: _Rows) -> tuple[bytes, Any]:
    """Commit the rows read; their answers, and the connection to use next (None after a
    failure, opened again for the next batch)."""
    if not rows:
        return b"", connection
    try:
        if connection is None:
            connection = writer_connection(database)
        stored = write_batch(database, [row for _, row in rows], connection)
    except Exception as error:  # the deliveries answer 503; nothing was acknowledged
        log.error("the intake could not commit a batch", error=type(error).__name__, detail=str(error)[:200])
        if connection is not None:
            discard(connection)
        return b"".join(answer(token, FAILED) for token, _ in rows), None
    answers = []
    for (token, row), new in zip(rows, stored, strict=True):
        status = STATUSES.index(row.status)
        answers.append(answer(token, STORED if new else ALREADY_STORED, status, row.last_error))
    return b"".join(answers), connection


def serve(channel: socket.socket, database: Database) -> None:
    """Read deliveries until the other end closes; commit each batch that has arrived, answer it.

    A batch is what one read finds in the socket: everything sent while the last commit ran
    (at most `MAX_BATCH`; the rest is the next batch). The read waits only when no whole
    delivery is left over.
    """
    connection: Any = writer_connection(database)
    channel.sendall(answer(0, READY))
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
            rows, refused = _rows(frames)
            with contextlib.suppress(OSError):  # the server went away: its stores are failed there
                if refused:  # a 400 (or a body that could not be read) waits for no commit
                    channel.sendall(b"".join(refused))
            answers, connection = _commit(database, connection, rows)
            with contextlib.suppress(OSError):
                channel.sendall(answers)
    finally:
        if connection is not None:
            connection.close()
        checkpoints.close()


def main() -> None:
    """`python -m app.store.intake_child FD`, started by `ProcessDeliveryWriter.start`."""
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
