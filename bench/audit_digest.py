"""What the audit chain costs on the write path: N door executes with the digest and without.

Each round runs `--tickets` tickets through publish, claim and deliver (three executes, four
events each ticket) through `TicketService.execute`, once as shipped and once with the digest
switched off (no previous digest in the door's read, no canonical JSON, no sha256), alternating rounds in
fresh databases so both meet the same disk; it prints the median per execute, and the pure
cost of one digest (canonical JSON and sha256) on its own. A measurement, not a test.

    python bench/audit_digest.py [--tickets 200] [--rounds 3] [--postgres URL]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import bindparam, null, select, text

from app.store import tickets as door
from app.store.database import Database
from app.store.tickets import TicketService
from policies import audit
from policies.commands import Claim, Deliver, Publish
from policies.model import TicketKey
from support.comments import REQUESTER, RUNNER, Comments
from support.databases import reset_schema


@contextmanager
def digest_off() -> Iterator[None]:
    """The door as it was before the chain: no digest read, computed or stored."""
    saved = door.audit, door.audit_event, door._SELECT_TICKET_TO_WRITE
    door.audit = SimpleNamespace(chain=lambda previous, event: None, seed=str)  # type: ignore[assignment]
    door.audit_event = lambda row: None  # type: ignore[assignment,return-value]
    columns = door.tickets.c
    door._SELECT_TICKET_TO_WRITE = select(
        columns.id, columns.revision, columns.snapshot, null().label("digest")
    ).where(columns.repository == bindparam("b_repository"), columns.number == bindparam("b_number"))
    try:
        yield
    finally:
        door.audit, door.audit_event, door._SELECT_TICKET_TO_WRITE = saved


def seconds_per_execute(database: Database, tickets: int) -> float:
    service, comments = TicketService(database), Comments()
    started = time.perf_counter()
    for number in range(1, tickets + 1):
        key = TicketKey("acme/bench", number)
        service.execute(key, Publish("Bench me"), comments.context(REQUESTER))
        service.execute(key, Claim(branch=f"agent/{number}"), comments.context(RUNNER))
        service.execute(
            key, Deliver("Done", branch=f"agent/{number}", commit="a" * 40), comments.context(RUNNER)
        )
    return (time.perf_counter() - started) / (3 * tickets)


def fresh(url: str | None, folder: Path, name: str) -> Database:
    database = Database(url or f"sqlite:///{folder}/{name}.db")
    if url:
        reset_schema(database)
    database.migrate()
    return database


def measure(url: str | None, tickets: int, rounds: int) -> dict[str, float]:
    timings: dict[str, list[float]] = {"with digest": [], "without": []}
    with tempfile.TemporaryDirectory() as folder:
        for round_ in range(rounds):
            order = ("with digest", "without") if round_ % 2 == 0 else ("without", "with digest")
            for label in order:
                database = fresh(url, Path(folder), f"{label.replace(' ', '-')}-{round_}")
                try:
                    if label == "without":
                        with digest_off():
                            timings[label].append(seconds_per_execute(database, tickets))
                    else:
                        timings[label].append(seconds_per_execute(database, tickets))
                        with database.read() as connection:
                            stored = connection.execute(
                                text("SELECT count(digest) FROM ticket_events")
                            ).scalar()
                        assert stored == 4 * tickets, stored
                finally:
                    database.close()
    return {label: statistics.median(values) for label, values in timings.items()}


def pure_digest_seconds(count: int = 20_000) -> float:
    event = audit.AuditedEvent(
        revision=3, type="delivered", actor="coder-bot[bot]", actor_id=101, role="runner",
        at=datetime(2026, 12, 1, tzinfo=UTC), operation_id="comment:123456789", policy_version="cfg:abc",
        data={"attempt": 1, "summary": "Done " * 20, "branch": "agent/1", "artifacts": [], "via": "comment"},
    )  # fmt: skip
    started, previous = time.perf_counter(), "ticket:1"
    for _ in range(count):
        previous = audit.chain(previous, event)
    return (time.perf_counter() - started) / count


def report(name: str, figures: dict[str, Any]) -> None:
    on, off = figures["with digest"], figures["without"]
    print(
        f"{name:<11} with digest {on * 1e3:7.3f} ms/execute   without {off * 1e3:7.3f} ms/execute   "
        f"difference {(on - off) * 1e6:+8.1f} us ({(on / off - 1) * 100:+.1f} %)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tickets", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--postgres", help="a PostgreSQL URL whose schema may be dropped")
    args = parser.parse_args()
    print(f"one digest alone (canonical JSON + sha256): {pure_digest_seconds() * 1e6:.1f} us")
    report("SQLite", measure(None, args.tickets, args.rounds))
    if args.postgres:
        report("PostgreSQL", measure(args.postgres, args.tickets, args.rounds))


if __name__ == "__main__":
    main()
