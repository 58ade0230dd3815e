"""The command counter, in memory: what a handler counted, to read back in a test."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from handlers.ports import Outcome
from policies.commands import CommandName


@dataclass
class FakeCounts:
    """Counts (command, `Outcome.label`) as `app.runtime.metrics.Metrics.count_command` labels them."""

    counted: Counter[tuple[str, str]] = field(default_factory=Counter)

    def count_command(self, command: CommandName, outcome: Outcome) -> None:
        """One more `command` with this outcome."""
        self.counted[(command.value, outcome.label)] += 1
