"""The checkpointer's order of work past the WAL limit, against a scripted SQLite connection:
PASSIVE passes beside the writers until one finds little to copy, then one RESTART with the
writers held (the real WAL is in tests/integration/test_checkpoints.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from app.store.checkpoints import CATCH_UP_FRAMES, CATCH_UP_PASSES, WalCheckpointer

PAGE = 4096
LIMIT = 64 * 1024 * 1024
OVER = LIMIT // PAGE + 1_000  # frames in a WAL past the limit


class ScriptedWal:
    """Answers `PRAGMA wal_checkpoint(...)` from a script of PASSIVE outcomes, noting each call
    and whether the writers were held when it came."""

    def __init__(self, passes: list[tuple[int, int, int]], restart: tuple[int, int, int]) -> None:
        self.passes, self.restart = list(passes), restart
        self.held = False
        self.calls: list[tuple[str, bool]] = []

    def execute(self, sql: str) -> Any:
        if "page_size" in sql:
            answer: tuple[int, ...] = (PAGE,)
        elif "PASSIVE" in sql:
            self.calls.append(("PASSIVE", self.held))
            answer = self.passes.pop(0)
        else:
            assert "RESTART" in sql
            self.calls.append(("RESTART", self.held))
            answer = self.restart
        return _Row(answer)


class _Row:
    def __init__(self, row: tuple[int, ...]) -> None:
        self.row = row

    def fetchone(self) -> tuple[int, ...]:
        return self.row


class HeldDatabase:
    """The part of `Database` the checkpointer uses: its process-wide writer lock."""

    def __init__(self, wal: ScriptedWal) -> None:
        self.wal = wal
        self.lock = threading.RLock()

    @contextmanager
    def writing(self, timeout: float | None = None) -> Iterator[None]:
        with self.lock:
            self.wal.held = True
            try:
                yield
            finally:
                self.wal.held = False


Outcome = tuple[int, int, int]  # (busy, frames in the WAL, frames copied)


def checkpoint(passes: list[Outcome], restart: Outcome) -> tuple[ScriptedWal, WalCheckpointer]:
    """One `_checkpoint` over the scripted WAL."""
    wal = ScriptedWal(passes, restart)
    checkpointer = WalCheckpointer(HeldDatabase(wal), restart_bytes=LIMIT)  # type: ignore[arg-type]
    checkpointer._checkpoint(wal)
    return wal, checkpointer


def test_below_the_limit_one_passive_pass_and_no_hold() -> None:
    wal, checkpointer = checkpoint([(0, 1_000, 1_000)], (0, 0, 0))
    assert wal.calls == [("PASSIVE", False)]
    assert checkpointer.restarts == 0


def test_past_the_limit_passes_catch_up_until_one_copies_little_then_the_restart_holds_the_writers() -> None:
    passes = [
        (0, OVER, OVER),  # the interval's pass: everything up to its start copied
        (0, OVER + 1_400, OVER + 1_400),  # what arrived during it: 1,400 frames
        (0, OVER + 1_500, OVER + 1_500),  # then 100: little enough
    ]
    wal, checkpointer = checkpoint(passes, (0, OVER + 1_530, OVER + 1_530))
    assert wal.calls == [("PASSIVE", False)] * 3 + [("RESTART", True)]
    assert checkpointer.restarts == 1
    assert checkpointer.held_frames == 30  # what the hold copied: only what came after the last pass


def test_a_flood_faster_than_the_copy_gets_its_restart_after_a_bounded_number_of_passes() -> None:
    passes = [(0, OVER + n * 5_000, OVER + n * 5_000) for n in range(CATCH_UP_PASSES + 1)]
    wal, checkpointer = checkpoint(passes, (0, OVER + 30_000, OVER + 30_000))
    assert wal.calls == [("PASSIVE", False)] * (CATCH_UP_PASSES + 1) + [("RESTART", True)]
    assert checkpointer.restarts == 1


def test_a_restart_kept_from_starting_the_wal_over_is_not_counted() -> None:
    passes = [(0, OVER, OVER), (0, OVER + CATCH_UP_FRAMES, OVER + CATCH_UP_FRAMES)]
    wal, checkpointer = checkpoint(passes, (1, OVER + 300, OVER + 300))  # a reader kept it busy
    assert wal.calls[-1] == ("RESTART", True)
    assert checkpointer.restarts == 0
