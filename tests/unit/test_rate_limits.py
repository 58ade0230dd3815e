"""Until when a rate-limited answer holds the installation back (`app.github.rate_limits`)."""

from __future__ import annotations

from email.utils import formatdate

import httpx
import pytest

from app.github.rate_limits import (
    MAX_WAIT_SECONDS,
    MIN_WAIT_SECONDS,
    SECONDARY_LIMIT_FALLBACK_SECONDS,
    limited_until,
    rate_limit_until,
)

NOW = 1_800_000_000.0


def limited(
    headers: dict[str, str], status: int = 403, text: str = "API rate limit exceeded"
) -> httpx.Response:
    return httpx.Response(status, headers=headers, text=text)


def test_a_reset_in_the_future_is_waited_for() -> None:
    answer = limited({"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) + 120)})
    assert rate_limit_until(answer, NOW) == NOW + 120


def test_a_reset_read_against_githubs_clock_when_ours_is_ahead() -> None:
    """Our clock 300 s ahead of GitHub's: its reset, 120 s after its own `Date`, looks past to us;
    the wait is still the 120 s GitHub means, not a call at once into the same limit."""
    github_now = NOW - 300
    answer = limited({
        "x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(github_now) + 120),
        "date": formatdate(github_now, usegmt=True),
    })  # fmt: skip
    assert rate_limit_until(answer, NOW) == NOW + 120


def test_a_reset_in_the_past_without_a_date_still_waits() -> None:
    answer = limited({"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) - 50)})
    assert rate_limit_until(answer, NOW) == NOW + MIN_WAIT_SECONDS


@pytest.mark.parametrize(
    ("value", "waited"),
    [
        ("30", 30.0),
        ("-5", MIN_WAIT_SECONDS),
        ("0", MIN_WAIT_SECONDS),
        ("nan", SECONDARY_LIMIT_FALLBACK_SECONDS),
        ("inf", SECONDARY_LIMIT_FALLBACK_SECONDS),
        ("1e12", MAX_WAIT_SECONDS),
        ("soon", SECONDARY_LIMIT_FALLBACK_SECONDS),
    ],
)
def test_retry_after_is_kept_within_bounds(value: str, waited: float) -> None:
    """A Retry-After GitHub would not send (negative, not a number, past an hour) never makes the
    next call go at once, never waits for good, never NaN."""
    assert rate_limit_until(limited({"retry-after": value}, 429), NOW) == NOW + waited
    graphql = httpx.Response(200, headers={"retry-after": value})
    assert limited_until(graphql, NOW) == NOW + waited


def test_a_retry_after_date_is_read_against_githubs_clock() -> None:
    github_now = NOW - 300
    answer = limited(
        {
            "retry-after": formatdate(github_now + 45, usegmt=True),
            "date": formatdate(github_now, usegmt=True),
        },
        429,
    )
    assert rate_limit_until(answer, NOW) == NOW + 45


def test_a_403_that_is_no_rate_limit_is_none() -> None:
    assert rate_limit_until(httpx.Response(403, text="Resource not accessible by integration"), NOW) is None


def test_a_reset_of_digits_that_are_not_ascii_waits_the_fallback_not_a_crash() -> None:
    """`str.isdigit` takes `²`, `float` does not: a reset header of such digits (a proxy's answer)
    is read as no reset, and the secondary limit's fallback is waited, not a ValueError."""
    answer = httpx.Response(
        403,
        headers=[(b"x-ratelimit-remaining", b"0"), (b"x-ratelimit-reset", "²".encode("latin-1"))],
        text="limit",
    )
    assert rate_limit_until(answer, NOW) == NOW + SECONDARY_LIMIT_FALLBACK_SECONDS
