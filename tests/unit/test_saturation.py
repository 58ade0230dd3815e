"""When the intake counts as flooded, for the worker to give way to it (`Saturation`)."""

from __future__ import annotations

from app.store.intake import CALM_AFTER, SATURATED, SATURATED_HOLD, Saturation


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def flooded(clock: Clock) -> Saturation:
    saturation = Saturation(clock)
    for _ in range(SATURATED + 1):
        saturation.enter()
    return saturation


def test_more_than_saturated_waiting_is_a_flood_and_fewer_never_were() -> None:
    clock = Clock()
    saturation = Saturation(clock)
    for _ in range(SATURATED):
        saturation.enter()
    assert not saturation()
    saturation.enter()
    assert saturation()


def test_a_dip_between_commits_of_a_flood_still_counts_for_the_hold() -> None:
    """Under a flood the count dips below SATURATED between commits: still flooded until the
    hold has passed, even at a moment when every store was just answered."""
    clock = Clock()
    saturation = flooded(clock)
    for _ in range(SATURATED):
        saturation.leave()
    assert saturation.waiting == 1 and saturation()
    saturation.leave()
    assert saturation.waiting == 0 and saturation()  # answered this instant: not yet calm
    clock.now += SATURATED_HOLD
    saturation.enter()
    assert not saturation()  # the hold is over: one waiting delivery is no flood


def test_a_burst_that_was_all_answered_ends_the_hold_after_a_short_calm() -> None:
    """Five deliveries at once, all answered: after CALM_AFTER with nothing waiting the worker
    may take work at once, long before the hold would have ended."""
    clock = Clock()
    saturation = flooded(clock)
    for _ in range(SATURATED + 1):
        saturation.leave()
    clock.now += CALM_AFTER * 1.01
    assert CALM_AFTER < SATURATED_HOLD
    assert not saturation()
