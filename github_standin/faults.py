"""The faults the GitHub stand-in injects: queued per request, drawn at random, and the watch
on the Retry-Afters it answered."""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Fault:
    """One injected failure, consumed by one matching request.

    `apply_then_fail` performs the request's effect, then answers `status`; `apply_then_timeout`
    performs it and answers only after `delay` seconds, past the client's timeout;
    `apply_then_drop` performs it and closes the connection without an answer. All three are
    the ambiguous failures a client must survive without doing things twice. `slow` is no
    failure: the answer is the right one, `delay` seconds late (GitHub under load).
    """

    status: int = 500
    retry_after: int | None = None
    secondary_rate_limit: bool = False
    primary_rate_limit: bool = False
    apply_then_fail: bool = False
    apply_then_timeout: bool = False
    delay: float = 0.0
    apply_then_drop: bool = False
    slow: bool = False


@dataclass
class RandomFaults:
    """Faults drawn at random for every GitHub request (the chaos benchmark's GitHub).

    Each request draws once: with probability `server_error` a 5xx before any effect; for a
    write (POST, PATCH), with `error_after_effect` a 502 after the effect, with
    `drop_after_effect` the connection closed after it, with `timeout_after_effect` an
    answer only after `stall_seconds` (past the client's timeout); with `secondary_limit` a
    403 secondary rate limit with a Retry-After of `retry_after` seconds (a range).
    `injected` counts what was injected, by kind; `enabled` turns the lot off.
    """

    server_error: float = 0.0
    error_after_effect: float = 0.0
    drop_after_effect: float = 0.0
    timeout_after_effect: float = 0.0
    secondary_limit: float = 0.0
    retry_after: tuple[int, int] = (2, 5)
    stall_seconds: float = 16.0
    seed: int | None = None
    enabled: bool = True
    injected: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def draw(self, method: str, path: str) -> Fault | None:
        """The fault for one request, or None.

        Installation tokens are only ever failed with a 5xx: that request is made inside the
        client library's authentication, not by the code under test.
        """
        if not self.enabled:
            return None
        token = path.endswith("/access_tokens")
        write = method in ("POST", "PATCH") and not token
        kinds: list[tuple[str, float, Fault]] = [
            ("5xx", self.server_error, Fault(status=self._rng.choice((500, 502, 503)))),
        ]
        if not token:
            limit = Fault(
                status=403, secondary_rate_limit=True, retry_after=self._rng.randint(*self.retry_after)
            )
            kinds.append(("403 secondary limit", self.secondary_limit, limit))
        if write:
            kinds += [
                ("5xx after effect", self.error_after_effect, Fault(status=502, apply_then_fail=True)),
                ("dropped after effect", self.drop_after_effect, Fault(apply_then_drop=True)),
                ("timeout after effect", self.timeout_after_effect, Fault(
                    apply_then_timeout=True, delay=self.stall_seconds
                )),
            ]  # fmt: skip
        roll = self._rng.random()
        for kind, probability, fault in kinds:
            if roll < probability:
                self.injected[kind] += 1
                return fault
            roll -= probability
        return None


@dataclass
class LimitWatch:
    """Remembers every Retry-After the stand-in answered, and the calls that came in before
    it ran out (GitHub bans integrations that keep calling through a secondary limit).

    A call counts as ignoring the limit only if it arrives `grace` seconds or more after the
    403 was sent, so requests already in flight when it was answered do not count.
    """

    grace: float = 1.0
    limits: dict[int | None, tuple[float, float]] = field(default_factory=dict)  # sent at, until
    # (installation, method, path, seconds since the 403, seconds it had still to run)
    ignored: list[tuple[int | None, str, str, float, float]] = field(default_factory=list)

    def limited(self, installation_id: int | None, retry_after: int) -> None:
        now = time.monotonic()
        self.limits[installation_id] = (now, now + retry_after)

    def arrived(self, installation_id: int | None, method: str, path: str) -> None:
        sent, until = self.limits.get(installation_id, (0.0, 0.0))
        now = time.monotonic()
        if sent + self.grace <= now < until:
            self.ignored.append((installation_id, method, path, round(now - sent, 2), round(until - now, 2)))
