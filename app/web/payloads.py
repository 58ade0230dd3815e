"""Lenient reading of webhook payloads: only the fields railyard needs, never a schema.

Payloads differ between github.com, GitHub Enterprise Server versions and time, so every
reader here tolerates missing, extra and new fields: a wrong type reads as "absent".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.contracts.webhook_events import SUBSCRIBED_EVENTS, UNLISTED_EVENTS
from handlers.payloads import dig, dig_int, dig_str

__all__ = ["SUBSCRIBED_EVENTS", "UNLISTED_EVENTS", "describe", "dig", "dig_int", "dig_str", "mismatch"]


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


@dataclass(frozen=True)
class Shape:
    """What a payload of one event carries: the keys it needs, and keys that betray another event.

    GitHub signs the body, not `X-GitHub-Event`, so a body signed for one event can be posted
    again under another event's name. Each subscribed or unlisted event has keys no other one
    of them has (an installation event alone names `installation.account`), and the shape
    checks those, nothing more: fields GitHub may add or drop stay free. Paths are dotted
    names, kept split too (this runs for every webhook).
    """

    needs: tuple[tuple[str, tuple[str, ...], type], ...]
    """(dotted path, its steps, type) for each value the payload must hold."""
    betrays: frozenset[str]
    """Top-level keys that, present, say the body is another event's."""
    betrays_nested: tuple[tuple[str, tuple[str, ...]], ...]
    """(dotted path, its steps) for each nested value that, present, says the same."""


_DEFINING = (
    "issue",
    "comment",
    "pull_request",
    "review",
    "thread",
    "check_run",
    "check_suite",
    "deployment",
    "deployment_status",
    "merge_group",
    "ref",
    "hook",
    "repositories_added",
    "installation.account",
    "deployment_callback_url",
)
"""Paths that identify an event. Some belong to events railyard does not subscribe to, whose
bodies a shared secret could still sign: `review` and `thread` (pull request reviews) and
`deployment_callback_url` (deployment protection rules, which carry a `deployment`)."""


def _shape(*needs: tuple[str, type], allows: tuple[str, ...] = ()) -> Shape:
    own = {path for path, _ in needs} | set(allows)
    others = [path for path in _DEFINING if path not in own]
    return Shape(
        tuple((path, tuple(path.split(".")), kind) for path, kind in needs),
        frozenset(path for path in others if "." not in path),
        tuple((path, tuple(path.split("."))) for path in others if "." in path),
    )


SHAPES: dict[str, Shape] = {
    "issue_comment": _shape(("issue", dict), ("comment", dict)),
    "issues": _shape(("issue", dict)),
    "pull_request": _shape(("pull_request", dict), ("number", int)),
    "push": _shape(("ref", str), ("before", str), ("after", str)),
    "check_suite": _shape(("check_suite", dict)),
    "check_run": _shape(("check_run", dict)),
    "deployment": _shape(("deployment", dict)),
    # A deployment status set by an Actions job names the job's check run.
    "deployment_status": _shape(("deployment", dict), ("deployment_status", dict), allows=("check_run",)),
    "merge_group": _shape(("merge_group", dict)),
    # A protection rule carries its deployment (or null, when the job creates none) and the ref.
    "deployment_protection_rule": _shape(
        ("deployment_callback_url", str), ("environment", str), allows=("deployment", "ref")
    ),
    # Renamed, transferred (and the actions railyard ignores): the repository itself, no more.
    "repository": _shape(("repository", dict), ("action", str)),
    "installation": _shape(("installation.account", dict)),
    "installation_repositories": _shape(
        ("installation.account", dict), ("repositories_added", list), ("repositories_removed", list)
    ),
    "ping": _shape(("zen", str), ("hook", dict), ("hook_id", int)),
}
"""The shape of every subscribed and unlisted event (tests check it against every real example)."""


def mismatch(event: str, payload: Any) -> str | None:
    """Why `payload` is not a payload of `event` (None when it is, or when the event is not known).

    The reason names the event and the path, never a value from the payload.
    """
    shape = SHAPES.get(event)
    if shape is None:
        return None
    for path, steps, kind in shape.needs:
        value = dig(payload, *steps)
        if not isinstance(value, kind) or isinstance(value, bool):
            return f"{event} payload lacks {path}"
    carried = [path for path, steps in shape.betrays_nested if dig(payload, *steps) is not None]
    if isinstance(payload, dict):
        carried += sorted(shape.betrays.intersection(payload))
    if carried:
        return f"{event} payload carries {carried[0]}, which belongs to another event"
    return None
