"""What a long-lived process does with its heap once it has started: collect, then freeze.

A started `railyard serve` or `railyard worker` holds about 165,000 objects the garbage
collector tracks (what it loaded and built to start: modules, tables, statements, models),
nearly all of them alive until it exits. CPython's full collection walks every one of them:
about 90 ms of CPU on the 2-core test machine, with the event loop held the whole time, and it
comes again whenever the objects promoted since the last one reach a quarter of those kept.
`gc.freeze()` moves what is alive now to a generation no collection walks, so later full
collections look only at what the process made since (`docs/benchmarks.md`, twentieth round).

Frozen objects are still freed by reference counting; only a cycle among them that becomes
garbage later is kept (a started process makes none that matter: its modules and tables live
as long as it does).
"""

from __future__ import annotations

import gc


def settle_heap() -> None:
    """Collect what starting left behind, then freeze everything alive: call once, when the
    process has started and before its loops take work (never in a test process)."""
    gc.collect()
    gc.freeze()
