"""The retry policy the worker and the outbox use: full jitter, and a horizon that outlasts
an outage of several minutes (GitHub's or the database's)."""

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


def test_retries_use_full_jitter_and_outlast_a_five_minute_outage() -> None:
    """Delays are drawn from [0, ceiling]; the tries span about an hour, never five minutes."""
    for policy in (default(Worker, "retry"), default(Outbox, "retry")):
        rng = random.Random(12)
        late = [policy.delay(10, rng) for _ in range(1000)]
        ceiling = policy.cap_seconds
        assert min(late) >= 0 and max(late) <= ceiling
        assert sum(d < ceiling / 2 for d in late) > 300  # full jitter, not [ceiling/2, ceiling]
        horizons = [horizon(policy, random.Random(seed)) for seed in range(500)]
        assert min(horizons) > 300, "some delivery gives up within a five-minute outage"
        assert 1800 < sum(horizons) / len(horizons) < 7200
