"""A clock for handlers (`handlers.ports.Clock`): epoch seconds that stand still."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class StillClock:
    """Epoch seconds that move only when the test moves them (`clock.now += 1`)."""

    now: float = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now
