"""`railyard deliveries` and `redeliver`: the stored webhook deliveries."""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime
from typing import Any, TextIO

from app.cli.common import EXIT_NOT_FOUND, EXIT_RUNNING, EXIT_USAGE, ready, table
from app.store.database import Database
from app.store.delivery_leases import leased_now
from app.store.queue_admin import list_deliveries, requeue, retry_waiting


def cmd_deliveries(args: argparse.Namespace, database: Database, out: TextIO, err: TextIO) -> int:
    """List stored webhook deliveries, newest first."""
    if not ready(database, err):
        return EXIT_NOT_FOUND
    items = list_deliveries(database, args.status, args.limit)
    if args.json:
        out.write(json.dumps([{"id": i.pop("delivery_id"), **i} for i in items], indent=2) + "\n")
        return 0
    rows = [["ID", "EVENT", "ACTION", "STATUS", "TRIES", "RECEIVED", "ERROR"]]
    for item in items:
        received = datetime.fromtimestamp(item["received_at"], UTC).strftime("%Y-%m-%d %H:%M:%S")
        error = (item["last_error"] or "").splitlines()[0][:60] if item["last_error"] else ""
        rows.append(
            [
                item["delivery_id"],
                item["event"],
                item["action"] or "-",
                item["status"],
                str(item["attempts"]),
                received,
                error,
            ]
        )
    table(rows, out)
    return 0


def cmd_redeliver(args: argparse.Namespace, database: Database, out: TextIO, err: TextIO) -> int:
    """Process stored deliveries again (safe: every change is keyed by its operation id)."""
    if not ready(database, err):
        return EXIT_NOT_FOUND
    if args.waiting:
        if args.ids:
            err.write("railyard: give delivery ids or --waiting, not both.\n")
            return EXIT_USAGE
        waiting = retry_waiting(database, time.time())
        out.write(f"railyard: {len(waiting)} waiting deliveries are due now.\n")
        return 0
    if not args.ids:
        err.write("railyard: give one or more delivery ids, or --waiting.\n")
        return EXIT_USAGE
    now = time.time()
    found = requeue(database, args.ids, now)
    for delivery_id in found:
        out.write(f"railyard: {delivery_id} queued again.\n")
    missing = [i for i in args.ids if i not in found]
    running = leased_now(database, missing, now)
    for delivery_id in missing:
        if delivery_id in running:
            err.write(_running_text(delivery_id, running[delivery_id]))
        else:
            err.write(f"railyard: {delivery_id} is not stored here (or its payload has expired).\n")
    if running:
        return EXIT_RUNNING
    return 0 if not missing else EXIT_NOT_FOUND


def _running_text(delivery_id: str, lease_until: float) -> str:
    """Why a delivery a worker holds was not queued again, and when to try."""
    until = datetime.fromtimestamp(lease_until, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return (
        f"railyard: {delivery_id} is being processed by a worker now (its lease runs to {until}); "
        "nothing was changed. Queued again now it would run twice at once: let it finish, or if "
        "its worker is gone, run redeliver again once the lease has run out.\n"
    )


def register(commands: Any) -> None:
    """Add `deliveries` and `redeliver`."""
    deliveries = commands.add_parser("deliveries")
    deliveries.add_argument("--status", choices=["pending", "done", "ignored", "failed", "rejected"])
    deliveries.add_argument("--limit", type=int, default=100)
    deliveries.add_argument("--json", action="store_true", help="print JSON")
    deliveries.set_defaults(handler=cmd_deliveries)
    redeliver = commands.add_parser("redeliver")
    redeliver.add_argument("ids", nargs="*", metavar="ID", help="X-GitHub-Delivery id")
    redeliver.add_argument(
        "--waiting",
        action="store_true",
        help="instead: every delivery waiting for its next try is tried now (once an outage is over)",
    )
    redeliver.set_defaults(handler=cmd_redeliver)
