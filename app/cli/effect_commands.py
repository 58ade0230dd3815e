"""`railyard effects` and `retry`: the outbox's intended GitHub writes."""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime
from typing import Any, TextIO

from app.cli.common import EXIT_NOT_FOUND, EXIT_USAGE, ready, table
from app.store.database import Database
from app.store.effects import (
    CANCELLED,
    DONE,
    FAILED,
    PENDING,
    RETRYABLE,
    list_effects,
    retry_effects,
    retry_waiting_effects,
)


def _when(epoch: float | None) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S") if epoch is not None else "-"


def _first_line(error: str | None) -> str:
    return error.splitlines()[0][:60] if error else ""


def cmd_effects(args: argparse.Namespace, database: Database, out: TextIO, err: TextIO) -> int:
    """List the outbox's effects, newest first."""
    if not ready(database, err):
        return EXIT_NOT_FOUND
    items = list_effects(database, args.status, args.limit)
    if args.json:
        out.write(json.dumps(items, indent=2) + "\n")
        return 0
    rows = [["ID", "KIND", "REPOSITORY", "STATUS", "TRIES", "NEXT", "CREATED", "ERROR"]]
    for item in items:
        due = item["next_attempt_at"] if item["status"] == PENDING else None
        rows.append(
            [
                str(item["id"]),
                item["kind"],
                item["repository"],
                item["status"],
                str(item["attempts"]),
                _when(due),
                _when(item["created_at"]),
                _first_line(item["last_error"]),
            ]
        )
    table(rows, out)
    return 0


def _explain(effect_id: int, status: str | None) -> str:
    """Why an effect was not retried, for the operator."""
    if status is None:
        return f"railyard: no effect {effect_id} is stored here."
    if status == DONE:
        return f"railyard: effect {effect_id} is done already; nothing to retry."
    return f"railyard: effect {effect_id} is {status}; only failed or cancelled effects are retried."


def cmd_retry(args: argparse.Namespace, database: Database, out: TextIO, err: TextIO) -> int:
    """Put failed or cancelled effects back to pending, due now, with their attempts reset."""
    if not ready(database, err):
        return EXIT_NOT_FOUND
    if args.waiting:
        if args.ids:
            err.write("railyard: give effect ids or --waiting, not both.\n")
            return EXIT_USAGE
        waiting = retry_waiting_effects(database, time.time())
        out.write(f"railyard: {len(waiting)} waiting effects are due now.\n")
        return 0
    if not args.ids:
        err.write("railyard: give one or more effect ids, or --waiting.\n")
        return EXIT_USAGE
    outcome = retry_effects(database, args.ids, time.time())
    for effect_id, status in outcome.items():
        if status in RETRYABLE:
            out.write(f"railyard: effect {effect_id} ({status}) is pending again.\n")
        else:
            err.write(_explain(effect_id, status) + "\n")
    return 0 if any(status in RETRYABLE for status in outcome.values()) else EXIT_NOT_FOUND


def register(commands: Any) -> None:
    """Add `effects` and `retry`."""
    effects = commands.add_parser("effects")
    effects.add_argument("--status", choices=[PENDING, DONE, FAILED, CANCELLED])
    effects.add_argument("--limit", type=int, default=100)
    effects.add_argument("--json", action="store_true", help="print JSON")
    effects.set_defaults(handler=cmd_effects)
    retry = commands.add_parser("retry")
    retry.add_argument("ids", nargs="*", type=int, metavar="EFFECT_ID", help="an id from `railyard effects`")
    retry.add_argument(
        "--waiting",
        action="store_true",
        help="instead: every pending effect waiting for its next try is tried now (once an outage is over)",
    )
    retry.set_defaults(handler=cmd_retry)
