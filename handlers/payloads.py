"""Lenient reading of webhook payloads: only the fields railyard needs, never a schema.

Payloads differ between github.com, GitHub Enterprise Server versions and time, so every
reader here tolerates missing, extra and new fields: a wrong type reads as "absent".
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def dig(payload: Any, *path: str) -> Any:
    """The value at `path`, or None when any step is missing or not an object.

    Parsed JSON objects are dicts; testing for `dict` rather than the `Mapping` ABC keeps this
    cheap on the webhook path.
    """
    value = payload
    for step in path:
        if not isinstance(value, dict):
            return None
        value = value.get(step)
    return value


def dig_str(payload: Any, *path: str) -> str | None:
    """A string at `path`, or None."""
    value = dig(payload, *path)
    return value if isinstance(value, str) else None


def dig_int(payload: Any, *path: str) -> int | None:
    """An integer at `path` (booleans excluded), or None."""
    value = dig(payload, *path)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def dig_time(payload: Any, *path: str) -> datetime | None:
    """A GitHub timestamp (`2026-11-30T10:00:00Z`) at `path`, or None when absent or unreadable."""
    return github_time(dig_str(payload, *path))


def github_time(text: str | None) -> datetime | None:
    """A GitHub timestamp read as an aware time (one without an offset is UTC, as GitHub's are);
    None when absent or unreadable (not a time, an offset past a day)."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def time_or(text: str | None, fallback: float) -> datetime:
    """A GitHub timestamp, or `fallback` (epoch seconds) when it is absent or unreadable."""
    return github_time(text) or datetime.fromtimestamp(fallback, UTC)
