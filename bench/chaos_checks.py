"""The chaos campaign's invariant checks (bench/chaos.py): what must hold once the system settled.

Each check adds what it finds to `Violations`, by kind, with examples a person can look up.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

from sqlalchemy import text

from app.contracts.effect_types import status_key
from app.store.database import Database
from app.store.effects import marker
from bench.chaos_actors import ChaosStream, Delivery
from github_standin import StandinState
from policies.checks import CHECK_NAME
from support.world import REPO, World

MARKER_PREFIX = "<!-- railyard:effect:"


class Violations(defaultdict[str, list[str]]):
    """Violations by kind, each with its examples."""

    def __init__(self) -> None:
        super().__init__(list)

    def add(self, kind: str, example: str) -> None:
        """Record one violation of `kind`, with an example a person can look up."""
        self[kind].append(example)


def check_deliveries(database: Database, deliveries: list[Delivery], found: Violations) -> None:
    """Every acknowledged delivery is stored with a final status."""
    with database.read() as connection:
        rows = connection.execute(
            text("SELECT delivery_id, status, last_error, attempts FROM webhook_deliveries")
        ).all()
    stored = {row.delivery_id: row for row in rows}
    for delivery in deliveries:
        row = stored.get(delivery.id)
        if not delivery.acknowledged.is_set():
            found.add("delivery never acknowledged", f"{delivery.event} {delivery.id}")
        elif row is None:
            found.add("acknowledged delivery lost", f"{delivery.event} {delivery.id}")
        elif row.status not in ("done", "ignored"):
            example = f"{delivery.event} {delivery.id} after {row.attempts} attempts: {row.last_error}"
            found.add(f"delivery {row.status}", example)


def check_outbox(database: Database, found: Violations) -> None:
    """No intended GitHub write is still pending or failed."""
    with database.read() as connection:
        rows = connection.execute(
            text("SELECT dedupe_key, status, attempts, last_error FROM outbox_effects "
                 "WHERE status IN ('pending', 'failed')")
        ).all()  # fmt: skip
    for row in rows:
        found.add(f"GitHub write {row.status}", f"{row.dedupe_key} after {row.attempts}: {row.last_error}")


def effect_marker(body: str) -> str | None:
    """The outbox marker a comment of the app ends with, if any."""
    start = body.rfind(MARKER_PREFIX)
    return body[start:] if start >= 0 else None


def check_github(world: World, streams: list[ChaosStream], found: Violations) -> None:
    """What GitHub shows: one status comment per ticket, as it renders now; no reaction on a
    command written on the issue (the status comment acknowledges it); no reply twice; at most
    one railyard check-run per commit."""
    for stream in streams:
        number = stream.ticket.number
        shown = world.status_comments(number)
        if len(shown) != 1:
            found.add("status comments != 1", f"#{number}: {len(shown)}")
        elif world.ticket(number) is not None and shown[0] != world.expected_status(number):
            found.add("status comment stale", f"#{number}")
        for comment_id in stream.commands:
            reactions = world.reactions_to(comment_id)
            if reactions:
                found.add("reaction on an issue command", f"#{number} comment {comment_id}: {reactions}")
    statuses = {marker(status_key(REPO, stream.ticket.number)) for stream in streams}
    replies = Counter(
        (c.issue_number, effect_marker(c.body))
        for c in world.github.comments.values()
        if c.app_id and effect_marker(c.body) not in statuses
    )
    for (number, text_marker), n in replies.items():
        if n > 1:
            found.add("reply written more than once", f"#{number}: {n} x {text_marker}")
    runs = Counter(r.head_sha for r in world.github.check_runs.values() if r.name == CHECK_NAME)
    for sha, n in runs.items():
        if n > 1:
            found.add("check-runs > 1 per commit", f"{sha[:12]}: {n}")


def check_limits(state: StandinState, found: Violations) -> None:
    """No call reached GitHub through a Retry-After it had answered."""
    assert state.limit_watch is not None
    for installation, method, path, since, left in state.limit_watch.ignored:
        example = f"installation {installation}: {method} {path}, {since} s after the 403, {left} s early"
        found.add("call during Retry-After", example)


def facts(database: Database) -> dict[int, dict[str, Any]]:
    """Each ticket's revision-independent facts: rails, attempts, delivery records, command outcomes."""
    out: dict[int, dict[str, Any]] = defaultdict(lambda: defaultdict(list))
    with database.read() as connection:
        for row in connection.execute(text("SELECT number, work, integration, deployment FROM tickets")):
            out[row.number]["rails"] = [row.work, row.integration, row.deployment]
        attempts = connection.execute(text(
            "SELECT t.number, a.number AS n, a.runner, a.opened_by, a.check_in_minutes, a.branch "
            "FROM attempts a JOIN tickets t ON t.id = a.ticket_id ORDER BY t.number, a.number"
        ))  # fmt: skip
        for row in attempts:
            out[row.number]["attempts"].append(list(row)[1:])
        records = connection.execute(text(
            "SELECT t.number, d.attempt, d.runner, d.summary, d.branch, d.commit_sha, d.pull_request, "
            "d.artifacts, d.comment_id FROM delivery_records d JOIN tickets t ON t.id = d.ticket_id "
            "ORDER BY t.number, d.comment_id"
        ))  # fmt: skip
        for row in records:
            out[row.number]["delivery records"].append(list(row)[1:])
        operations = connection.execute(text(
            "SELECT number, operation_id, outcome, refusal_code FROM operations WHERE change LIKE '/%' "
            "ORDER BY number, operation_id"
        ))  # fmt: skip
        for row in operations:
            out[row.number]["command outcomes"].append(list(row)[1:])
    return out


def check_replay(chaos: World, clean: World, numbers: list[int], found: Violations) -> None:
    """Every ticket's facts, and its check-runs' verdicts, equal the clean replay's."""
    ours, theirs = facts(chaos.database), facts(clean.database)
    for number in numbers:
        for name in ("rails", "attempts", "delivery records", "command outcomes"):
            mine, clean_one = ours[number].get(name), theirs[number].get(name)
            if json.dumps(mine, default=str) != json.dumps(clean_one, default=str):
                found.add(f"{name} differ from the replay", f"#{number}: {mine} != {clean_one}")
    # A superseded head's check says whatever was true when it stopped being the head, which
    # depends on timing; the check that gates the merge is the one on each PR's last head.
    verdicts = [_verdicts(chaos.github), _verdicts(clean.github)]
    heads = {pull.head_sha for pull in chaos.github.repositories[REPO].pulls.values()}
    for sha in sorted(heads & (set(verdicts[0]) | set(verdicts[1]))):
        if verdicts[0].get(sha) != verdicts[1].get(sha):
            found.add(
                "check-run differs from the replay",
                f"{sha[:12]}: {verdicts[0].get(sha)} != {verdicts[1].get(sha)}",
            )


def _verdicts(state: StandinState) -> dict[str, tuple[str | None, str | None]]:
    runs = sorted((r for r in state.check_runs.values() if r.name == CHECK_NAME), key=lambda r: r.id)
    return {r.head_sha: (r.conclusion, r.output.get("title")) for r in runs}
