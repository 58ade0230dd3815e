"""How long an idle loop (the worker, the outbox) waits before it looks for work again.

A look that finds nothing costs a transaction and, on a quiet process, a wake-up whose caches
are cold: on the 2-core machine six idle PostgreSQL processes spent 0.14 CPU seconds a second
looking, the most of what a quiet deployment costs (`docs/benchmarks.md`). So each look that
finds nothing doubles the wait, from `shortest` up to `longest`; a look that finds work, or a
notice that work was stored in this process (`woken`), brings it back to `shortest`. Work this
process scheduled for later (a retry, a write held for GitHub's spacing) is looked for when it
falls due (`due_at`), whatever the wait has grown to.

What another process stores is found within `longest` seconds when nothing here was busy; a
busy process looks again as soon as a delivery or effect finishes, as before.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from dataclasses import dataclass, field

KEPT_DUE = 256
"""Due times kept at most (the earliest): one beyond them is found by the ordinary looks."""


@dataclass
class IdlePolls:
    """The wait before the next look, doubling while looks find nothing."""

    shortest: float
    longest: float
    clock: Callable[[], float] = time.time
    _wait: float = field(init=False)
    _due: list[float] = field(init=False, default_factory=list)  # a heap

    def __post_init__(self) -> None:
        self.longest = max(self.longest, self.shortest)
        self._wait = self.shortest

    def looked(self, found: bool) -> None:
        """A look happened: back to the shortest wait if it found work, else twice as long.
        What fell due before it was looked for by it."""
        self._wait = self.shortest if found else min(self._wait * 2, self.longest)
        now = self.clock()
        while self._due and self._due[0] <= now:
            heapq.heappop(self._due)

    def woken(self) -> None:
        """Work was stored here (the intake, a finished delivery's effects): look again soon."""
        self._wait = self.shortest

    def due_at(self, at: float) -> None:
        """Something this process scheduled falls due at `at` (the clock's time)."""
        heapq.heappush(self._due, at)
        if len(self._due) > KEPT_DUE:
            self._due = heapq.nsmallest(KEPT_DUE, self._due)

    def seconds(self) -> float:
        """How long to wait now: the current wait, or less when something falls due sooner (it
        is kept until a look at or after its time, whatever wakes the loop before)."""
        if not self._due:
            return self._wait
        return min(self._wait, max(self._due[0] - self.clock(), 0.0))
