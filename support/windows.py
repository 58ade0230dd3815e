"""Budgets count in clock windows (a minute, an hour, a day): a test that counts within one must
not start so near a window's end that it turns over mid-test and refills what it spends."""

from __future__ import annotations

import asyncio
import time

HOUR_TURN_SECONDS = 20.0  # an end-to-end test starting closer to an hour's end waits for the turn


def window_left(window: float) -> float:
    """Seconds until the clock `window` (seconds) turns."""
    return window - time.time() % window


async def clear_of_a_window_end(window: float, needed: float) -> None:
    """When the clock `window` ends within `needed` seconds, wait until it has turned."""
    if (left := window_left(window)) < needed:
        await asyncio.sleep(left + 0.05)
