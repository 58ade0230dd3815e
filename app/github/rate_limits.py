"""When GitHub's answer is a rate limit, and until when (Retry-After, the reset header, or a
minute for a secondary limit that names no time).

Every wait is at least `MIN_WAIT_SECONDS` and at most `MAX_WAIT_SECONDS` from now, whatever the
headers say: a reset or an HTTP date in the past (this machine's clock ahead of GitHub's) would
otherwise send the next call at once, into the same limit, again and again, and a Retry-After
of `inf` or `nan` (a proxy's) would stop the installation's calls for good or never. A reset is
read against GitHub's own clock (the answer's `Date`) where it has one, so a skewed clock here
waits as long as GitHub means.
"""

from __future__ import annotations

import math
from email.utils import parsedate_to_datetime

import httpx

from policies.model import ascii_digits

SECONDARY_LIMIT_FALLBACK_SECONDS = 60.0
MIN_WAIT_SECONDS = 1.0
MAX_WAIT_SECONDS = 3600.0
"""GitHub's primary limits reset within the hour; a longer wait is no answer of GitHub's."""


def _waited(seconds: float, now: float) -> float:
    """`now` plus `seconds`, kept within `MIN_WAIT_SECONDS` and `MAX_WAIT_SECONDS`."""
    if not math.isfinite(seconds):
        seconds = SECONDARY_LIMIT_FALLBACK_SECONDS
    return now + min(max(seconds, MIN_WAIT_SECONDS), MAX_WAIT_SECONDS)


def _epoch(value: str | None) -> float | None:
    """An HTTP date as epoch seconds (None when it does not read)."""
    if not value:
        return None
    try:
        return parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def _github_now(response: httpx.Response, now: float) -> float:
    """GitHub's clock when it answered (its `Date`), else ours."""
    said = _epoch(response.headers.get("date"))
    return said if said is not None else now


def _retry_after(response: httpx.Response, now: float) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return _waited(float(value), now)
    except ValueError:
        at = _epoch(value)
        if at is None:
            return _waited(SECONDARY_LIMIT_FALLBACK_SECONDS, now)
        return _waited(at - _github_now(response, now), now)


def rate_limit_until(response: httpx.Response, now: float) -> float | None:
    """When a 403/429 is a rate limit, the epoch second it lifts; None otherwise."""
    if response.status_code not in (403, 429):
        return None
    told = _told(response, now)
    if told is not None:
        return told
    if response.status_code == 429 or "rate limit" in response.text.lower():
        return now + SECONDARY_LIMIT_FALLBACK_SECONDS
    return None


def limited_until(response: httpx.Response, now: float) -> float:
    """Until when a GraphQL answer that says RATE_LIMITED (a 200) holds the installation back:
    its Retry-After, else its reset once none remains, else a minute (a secondary limit)."""
    told = _told(response, now)
    return told if told is not None else now + SECONDARY_LIMIT_FALLBACK_SECONDS


def _told(response: httpx.Response, now: float) -> float | None:
    """When the answer itself says the limit lifts: its Retry-After, else, once none remains,
    its reset (a minute when the reset is missing); None when it says neither."""
    retry_at = _retry_after(response, now)
    if retry_at is not None:
        return retry_at
    if response.headers.get("x-ratelimit-remaining") != "0":
        return None
    reset = response.headers.get("x-ratelimit-reset", "")
    if not ascii_digits(reset):
        return _waited(SECONDARY_LIMIT_FALLBACK_SECONDS, now)
    return _waited(float(reset) - _github_now(response, now), now)
