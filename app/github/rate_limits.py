"""When GitHub's answer is a rate limit, and until when (Retry-After, the reset header, or a
minute for a secondary limit that names no time)."""

from __future__ import annotations

from email.utils import parsedate_to_datetime

import httpx

SECONDARY_LIMIT_FALLBACK_SECONDS = 60.0


def _retry_after(response: httpx.Response, now: float) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return now + float(value)
    except ValueError:
        try:
            return parsedate_to_datetime(value).timestamp()
        except (TypeError, ValueError):
            return now + SECONDARY_LIMIT_FALLBACK_SECONDS


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
    return max(float(reset), now) if reset.isdigit() else now + SECONDARY_LIMIT_FALLBACK_SECONDS
