"""The intake's writer process's own side (`app.store.intake_child`): whole frames from one kept
buffer, each body read as the door read it, and the answers on the wire."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest
from sqlalchemy import select

from app.contracts.webhook_payloads import UnreadableBody
from app.store import intake_child
from app.store.intake import Received, Stored
from app.store.intake_child import (
    ANSWER,
    FAILED,
    MAX_REASON,
    STATUSES,
    UNREADABLE,
    _commit,
    _frames,
    _Inbox,
    _rows,
    answer,
)
from app.store.intake_process import ProcessDeliveryWriter
from app.store.queue import deliveries
from tests.conftest import sqlite_database
from tests.integration.test_intake import NOW
from tests.integration.test_intake_process import COMMENT, answers_of, frame, received, store, stored, writer

__all__ = ["writer"]  # the fixture


def test_frames_are_read_whole_in_order_and_a_torn_one_is_left_for_the_next_read() -> None:
    """The child takes only whole frames (at most `limit`), with every field as sent."""
    data = frame(1, "a", '{"zen": "é"}') + frame(2, "b") + frame(3, "c")
    buffer = bytearray(data[:-5])
    frames, used = _frames(buffer)
    assert [(token, got.delivery_id) for token, got, _ in frames] == [(1, "a"), (2, "b")]
    assert frames[0][1:] == (received("a"), '{"zen": "é"}'.encode())
    assert used == len(frame(1, "a", '{"zen": "é"}') + frame(2, "b"))
    limited, used = _frames(bytearray(data), limit=1)
    assert [token for token, _, _ in limited] == [1] and used == len(frame(1, "a", '{"zen": "é"}'))


def _read_all(
    inbox: _Inbox, ours: socket.socket, theirs: socket.socket, data: bytes, chunk: int
) -> list[int]:
    """Send `data` in pieces of `chunk` bytes; the tokens of the frames the inbox gave, in order."""
    tokens: list[int] = []
    for start in range(0, len(data), chunk):
        ours.sendall(data[start : start + chunk])
        while inbox.receive(theirs, wait=False) is not None or inbox.has_whole_frame():
            tokens += [token for token, _, _ in inbox.frames(limit=2)]
    return tokens


def test_the_inbox_gives_every_frame_once_in_order_whatever_the_reads_cut() -> None:
    """Frames torn across reads and across the buffer's end, in a buffer smaller than the stream."""
    data = b"".join(
        frame(token, f"d{token}", '{"zen": "%s"}' % ("z" * (token * 37 % 300))) for token in range(1, 60)
    )
    for chunk in (7, 100, 333, 4096):
        ours, theirs = socket.socketpair()
        with ours, theirs:
            inbox = _Inbox(capacity=1024)
            assert _read_all(inbox, ours, theirs, data, chunk) == list(range(1, 60)), chunk
            assert not inbox.has_whole_frame()


def test_the_inbox_grows_for_a_frame_larger_than_it_and_gives_the_room_back() -> None:
    """A 25 MB webhook fits; the buffer returns to its size once the frame is taken."""
    big = frame(1, "big", '{"zen": "%s"}' % ("x" * 5000))
    ours, theirs = socket.socketpair()
    with ours, theirs:
        inbox = _Inbox(capacity=512)
        assert _read_all(inbox, ours, theirs, big + frame(2, "small"), 256) == [1, 2]
        assert inbox.receive(theirs, wait=False) is None  # nothing there; the room is back to 512 bytes
        assert len(inbox._buffer) == 512


def test_a_full_inbox_of_whole_frames_reads_nothing_until_they_are_taken() -> None:
    """No byte is read over frames not yet committed."""
    data = frame(1, "a") + frame(2, "b")
    ours, theirs = socket.socketpair()
    with ours, theirs:
        inbox = _Inbox(capacity=len(data))
        ours.sendall(data + frame(3, "c"))
        assert inbox.receive(theirs, wait=False) is True
        assert inbox.receive(theirs, wait=False) is None  # full: frames 1 and 2 first
        assert [token for token, _, _ in inbox.frames()] == [1, 2]
        assert inbox.receive(theirs, wait=False) is True
        assert [token for token, _, _ in inbox.frames()] == [3]
        ours.close()
        assert inbox.receive(theirs, wait=True) is False


async def test_the_child_reads_each_body_as_the_door_did(writer: ProcessDeliveryWriter) -> None:
    """A body of its event's shape is stored pending (ignored when no handler takes the event),
    one of another shape rejected with its reason, one not JSON refused with the 400's sentence
    and not stored, in one batch."""
    outcomes = await asyncio.gather(
        writer.store_body(received("good"), COMMENT.encode()),
        writer.store_body(received("star", event="star", routed=False), b'{"action": "created"}'),
        writer.store_body(received("replayed", event="installation"), COMMENT.encode()),
        writer.store_body(received("garbage"), b"{not json"),
        writer.store_body(received("deep"), b'{"a": ' + b"[" * 5000 + b"]" * 5000 + b"}"),
        return_exceptions=True,
    )
    assert outcomes[:3] == [
        Stored(True, "pending"),
        Stored(True, "ignored"),
        Stored(True, "rejected", "installation payload lacks installation.account"),
    ]
    assert isinstance(outcomes[3], UnreadableBody) and str(outcomes[3]) == "body is not JSON"
    assert isinstance(outcomes[4], UnreadableBody) and "nested too deeply" in str(outcomes[4])
    assert set(stored(writer._database)) == {"good", "star", "replayed"}
    with writer._database.read() as connection:
        row = connection.execute(select(deliveries).where(deliveries.c.delivery_id == "good")).one()
    assert (row.event, row.action, row.status, row.received_at) == (
        "issue_comment",
        "created",
        "pending",
        NOW,
    )
    assert await store(writer, "good") is False  # the same id again


def test_a_body_whose_reading_fails_unexpectedly_fails_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One delivery the child cannot read for a reason of its own answers FAILED (503); the
    rest of its batch is committed and answered."""
    database = sqlite_database(tmp_path / "railyard.db")
    database.migrate()
    real = intake_child.row_of

    def row_of(got: Received, body: bytes) -> object:
        if got.delivery_id == "bad":
            raise ValueError("a bug")
        return real(got, body)

    monkeypatch.setattr(intake_child, "row_of", row_of)
    frames = [(1, received("ok"), COMMENT.encode()), (2, received("bad"), COMMENT.encode())]
    rows, refused = _rows(frames)
    answers, connection = _commit(database, None, rows)
    assert answers_of(b"".join(refused)) == [(2, FAILED)] and answers_of(answers) == [(1, 1)]
    assert set(stored(database)) == {"ok"}
    connection.close()
    database.close()


def test_a_reason_is_sent_whole_and_an_unreadable_body_answers_unreadable(tmp_path: Path) -> None:
    """The answers carry the reasons on the wire: parsed back whole, each after its header; an
    unreadable body's answer does not wait for the batch's commit."""
    database = sqlite_database(tmp_path / "railyard.db")
    database.migrate()
    frames = [(5, received("x"), b"[1]"), (6, received("y", event="installation"), COMMENT.encode())]
    rows, refused = _rows(frames)
    token, outcome, _, length = ANSWER.unpack_from(refused[0])
    assert (token, outcome) == (5, UNREADABLE) and len(refused) == 1
    assert refused[0][ANSWER.size : ANSWER.size + length] == b"body is not a JSON object"
    answers, connection = _commit(database, None, rows)
    token, outcome, status, length = ANSWER.unpack_from(answers)
    reason = answers[ANSWER.size : ANSWER.size + length].decode()
    assert (token, outcome, STATUSES[status]) == (6, 1, "rejected")
    assert reason == "installation payload lacks installation.account"
    connection.close()
    database.close()


def test_a_reason_past_the_limit_is_cut_between_characters() -> None:
    """Cut at `MAX_REASON` bytes, never inside a character: the server decodes every answer."""
    said = answer(1, UNREADABLE, reason="é" * MAX_REASON)
    length = ANSWER.unpack_from(said)[3]
    assert length <= MAX_REASON and said[ANSWER.size :].decode() == "é" * (length // 2)
