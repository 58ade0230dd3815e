"""Lenient reading of webhook payloads: only the fields railyard needs, never a schema.

Payloads differ between github.com, GitHub Enterprise Server versions and time, so every
reader here tolerates missing, extra and new fields: a wrong type reads as "absent".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SUBSCRIBED_EVENTS = (
    "issue_comment",
    "issues",
    "pull_request",
    "push",
    "check_suite",
    "check_run",
    "deployment",
    "deployment_status",
    "merge_group",
)
"""The events the app subscribes to (installation events arrive without subscribing, and ping)."""
UNLISTED_EVENTS = ("installation", "installation_repositories", "ping")


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


@dataclass(frozen=True)
class DeliveryFacts:
    """What intake reads from a payload: enough to store, route and order it."""

    action: str | None
    installation_id: int | None
    repository: str | None
    ordering_key: str | None


def _ordering_key(
    event: str, payload: Any, repository: str | None, installation_id: int | None
) -> str | None:
    """Deliveries with the same key are processed in the order received; others in parallel."""
    if event in ("installation", "installation_repositories"):
        return f"installation:{installation_id}" if installation_id is not None else None
    if repository is None:
        return None
    number = dig_int(payload, "issue", "number")
    if event in ("issues", "issue_comment") and number is not None:
        return f"{repository}#{number}"
    part: object = None
    if event == "pull_request":
        part = dig_int(payload, "pull_request", "number") or dig_int(payload, "number")
        return f"{repository}!{part}" if part is not None else None
    if event in ("check_run", "check_suite", "merge_group"):
        part = (
            dig_str(payload, event, "head_sha")
            or dig_str(payload, "check_run", "check_suite", "head_sha")
            or dig_str(payload, "merge_group", "head_sha")
        )
        return f"{repository}@{part}" if part else None
    if event == "push":
        part = dig_str(payload, "ref")
        return f"{repository}:{part}" if part else None
    if event in ("deployment", "deployment_status"):
        part = dig_int(payload, "deployment", "id")
        return f"{repository}^{part}" if part is not None else None
    return None


def describe(event: str, payload: Any) -> DeliveryFacts:
    """The facts intake stores alongside the raw payload."""
    installation_id = dig_int(payload, "installation", "id")
    repository = dig_str(payload, "repository", "full_name")
    repository = repository.casefold() if repository else None
    return DeliveryFacts(
        action=dig_str(payload, "action"),
        installation_id=installation_id,
        repository=repository,
        ordering_key=_ordering_key(event, payload, repository, installation_id),
    )
