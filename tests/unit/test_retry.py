"""The retry policy the worker and the outbox use: full jitter, and a horizon that outlasts
an outage of an hour (GitHub's or the database's)."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from app.runtime.outbox import Outbox
from app.runtime.worker import Worker


def default(cls: type, name: str) -> Any:
    """A dataclass field's default, as the server builds it."""
    [found] = [f for f in dataclasses.fields(cls) if f.name == name]
    return found.default_factory()  # type: ignore[misc]


def horizon(policy: Any, rng: random.Random) -> float:
    """How long from the first try to giving up: the delays before tries 2 to max_attempts."""
    return sum(policy.delay(attempt, rng) for attempt in range(1, policy.max_attempts))


class RecordingRandom(random.Random):
    """A random source that notes the bounds of every uniform draw it is asked for."""

    def __init__(self) -> None:
        super().__init__(7)
        self.bounds: list[tuple[float, float]] = []

    def uniform(self, a: float, b: float) -> float:
        """Record the bounds, then draw."""
        self.bounds.append((a, b))
        return super().uniform(a, b)


POLICIES = [("deliveries", default(Worker, "retry")), ("effects", default(Outbox, "retry"))]


def test_each_delay_is_drawn_uniformly_from_zero_to_the_capped_ceiling() -> None:
    """Full jitter: the draw for try n is uniform over [0, min(cap, base * 2**(n-1))], not [c/2, c]."""
    for _, policy in POLICIES:
        rng = RecordingRandom()
        for attempt in range(1, policy.max_attempts):
            policy.delay(attempt, rng)
        expected = [
            (0.0, min(policy.cap_seconds, policy.base_seconds * 2 ** (n - 1)))
            for n in range(1, policy.max_attempts)
        ]
        assert rng.bounds == expected


def test_the_expected_time_before_giving_up_is_at_least_an_hour() -> None:
    """The sum of the expected delays (half of each ceiling) before the last try is an hour or more."""
    for name, policy in POLICIES:
        expected = sum(
            min(policy.cap_seconds, policy.base_seconds * 2 ** (n - 1)) / 2
            for n in range(1, policy.max_attempts)
        )
        assert expected >= 3600, f"{name} give up after {expected:.0f} s on average"


def test_sampled_horizons_outlast_a_several_minute_outage() -> None:
    """Drawn for real, the tries span about an hour and never only five minutes."""
    for _, policy in POLICIES:
        horizons = [horizon(policy, random.Random(seed)) for seed in range(500)]
        assert min(horizons) > 300, "some delivery gives up within a five-minute outage"
        assert 3000 < sum(horizons) / len(horizons) < 7200
