"""`railyard audit verify` and `audit export`: the hash-chained event log (SPEC *Audit log*)."""

from __future__ import annotations

import argparse
import csv
import json
from datetime import UTC, datetime
from typing import Any, TextIO

from app.cli.common import EXIT_USAGE, repository_option
from app.store import audit_log as audit_store
from app.store.database import Database
from policies.audit import spreadsheet_safe

EXIT_BROKEN = 1
CSV_COLUMNS = (
    "ticket", "ticket_id", "revision", "type", "actor", "actor_id", "role", "via",
    "operation_id", "policy_version", "at", "digest",
)  # fmt: skip


def cmd_verify(args: argparse.Namespace, database: Database, out: TextIO, err: TextIO) -> int:
    """Recompute every ticket's chain and replay its events against its stored row: 0 when all
    hold, 1 naming the first break (a chain's revision, or what of a ticket's row differs)."""
    valid, repository = repository_option(args.repo, err)
    if not valid or not _ready(database, err):
        return EXIT_USAGE
    found = audit_store.verify(database, repository)
    if found.broken_ticket is not None and found.differs:
        out.write(
            f"railyard: {found.broken_ticket}: the stored ticket (revision {found.broken_revision}) is not "
            f"what its events replay to; it differs in {', '.join(found.differs)} "
            "(the ticket's row edited, or its last events deleted).\n"
        )
        return EXIT_BROKEN
    if found.broken_ticket is not None:
        out.write(
            f"railyard: {found.broken_ticket}: the audit chain breaks at revision {found.broken_revision} "
            "(an event edited, deleted or inserted, or stored without its digest).\n"
        )
        return EXIT_BROKEN
    events, tickets = _counted(found.events, "event"), _counted(found.tickets, "ticket")
    out.write(f"railyard: {events} of {tickets} checked: every chain holds.\n")
    return 0


def cmd_export(args: argparse.Namespace, database: Database, out: TextIO, err: TextIO) -> int:
    """Write every event, one JSON line or CSV row each, as the database hands them over."""
    valid, repository = repository_option(args.repo, err)
    if not valid:
        return EXIT_USAGE
    since = None
    if args.since is not None:
        since = _moment(args.since)
        if since is None:
            err.write(
                f"railyard: --since expects a date (2026-12-01) or an ISO-8601 time, got {args.since!r}.\n"
            )
            return EXIT_USAGE
    if not _ready(database, err):
        return EXIT_USAGE
    events = audit_store.export(database, repository, since)
    if args.format == "jsonl":
        for event in events:
            out.write(json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n")
        return 0
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for event in events:
        writer.writerow([_cell(event[column]) for column in CSV_COLUMNS])
    return 0


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return spreadsheet_safe(value) if isinstance(value, str) else str(value)


def _moment(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except (ValueError, OverflowError):  # not a time, or one UTC cannot hold (year 1 at +01:00)
        return None


def _ready(database: Database, err: TextIO) -> bool:
    if database.has_schema():
        return True
    err.write("railyard: the database has no railyard tables yet; run `railyard migrate` first.\n")
    return False


def register(commands: Any) -> None:
    """Add `audit verify` and `audit export`."""
    audit = commands.add_parser("audit")
    actions = audit.add_subparsers(dest="audit_command", required=True, metavar="ACTION")
    verify = actions.add_parser(
        "verify", help="recompute every ticket's chain and replay its events (exit 1 at the first break)"
    )
    verify.add_argument("--repo", metavar="OWNER/REPO", help="only this repository's tickets")
    verify.set_defaults(handler=cmd_verify)
    export = actions.add_parser("export", help="write every event with its digest (JSON lines or CSV)")
    export.add_argument("--repo", metavar="OWNER/REPO", help="only this repository's tickets")
    export.add_argument("--since", metavar="DATE", help="only events at or after this date or time (UTC)")
    export.add_argument("--format", choices=["jsonl", "csv"], default="jsonl")
    export.set_defaults(handler=cmd_export)


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
