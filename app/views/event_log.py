"""A ticket's event log as JSON items: what `railyard events --json` prints and
`GET /api/v1/repos/{owner}/{repo}/tickets/{number}/events` answers (one shape, so the two
cannot drift). Refused commands appear as `command_rejected`, after the event whose revision
they saw."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from handlers.ports import RecordedEvent
from policies.events import Event


def event_item(revision: int, event: Event) -> dict[str, Any]:
    """One event in the `events --json` shape (also each of a `POST .../commands` answer's `events`)."""
    return {
        "revision": revision,
        "type": event.type.value,
        "actor": event.actor,
        "actor_id": event.actor_id,
        "role": event.role,
        "at": event.at.isoformat(),
        "operation_id": event.operation_id,
        "policy_version": event.policy_version,
        "metadata": dict(event.data),
    }


def event_items(
    history: Sequence[RecordedEvent], refusals: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The log in revision order: each event, and each refused command as `command_rejected`."""
    items = [event_item(recorded.revision, recorded.event) for recorded in history]
    for refused in refusals:
        items.append(
            {
                "revision": refused["revision"],
                "type": "command_rejected",
                "actor": refused["actor"],
                "actor_id": refused["actor_id"],
                "role": None,
                "at": refused["at"].isoformat(),
                "operation_id": refused["operation_id"],
                "policy_version": refused["policy_version"],
                "metadata": {
                    "command": refused["change"],
                    "code": refused["refusal_code"],
                    "reason": refused["refusal_reason"],
                    "hint": refused["refusal_hint"],
                },
            }
        )
    # A refusal sorts after the event whose revision it saw.
    items.sort(key=lambda item: (item["revision"], item["type"] == "command_rejected", item["at"]))
    return items
