"""A started process freezes its heap: later full collections walk only what it made since."""

from __future__ import annotations

import gc

from app.runtime.heap import settle_heap


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_what_is_alive_at_the_start_is_frozen_and_later_garbage_still_collected() -> None:
    kept = [_Cycle() for _ in range(100)]
    try:
        settle_heap()
        assert gc.get_freeze_count() >= len(kept)
        assert not any(item is kept[0] for item in gc.get_objects())  # no generation walks it
        made_since = _Cycle()
        del made_since
        assert gc.collect() >= 1  # a cycle made after the start is still garbage collected
    finally:
        gc.unfreeze()
