"""`railyard status`, `events` and `resync`: one ticket's rails, its log, and a re-read from GitHub."""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import UTC, datetime
from typing import Any, TextIO

from app.bootstrap import command_shell, wire
from app.cli.common import EXIT_NOT_FOUND, EXIT_USAGE, ready, table, ticket_key
from app.cli.rail_policies import rail_policies
from app.settings import Settings
from app.store.database import Database
from app.store.signs import read_clocks
from app.views.event_log import event_items
from app.views.status_json import status_object
from handlers.resync import resync
from policies.model import TicketKey


def _print_status(summary: dict[str, Any], out: TextIO) -> None:
    def show(value: Any) -> str:
        return "-" if value is None else str(value).replace("_", " ")

    review = summary["review"]
    rows = [
        ["Ticket", summary["ticket"]],
        ["Revision", str(summary["revision"])],
        ["Work", show(summary["work"]) + (f" ({show(review)}, @{summary['reviewer']})" if review else "")],
        ["Repository", show(summary["integration"])],
        ["Deployment", show(summary["deployment"])],
    ]
    rows += [[f"  {env}", show(state)] for env, state in summary["deployments"].items()]
    rows += [
        ["Attempt", str(summary["attempt"])],
        ["Runner", f"@{summary['runner']}" if summary["runner"] else "-"],
        ["Owner", f"@{summary['owner']}" if summary["owner"] else "-"],
    ]
    delivery = summary["delivery"]
    if delivery:
        rows.append(["Last delivery", f"attempt {delivery['attempt']} by @{delivery['runner']}"])
        rows.append(["  commit", show(delivery["commit"])])
        rows.append(["  summary", delivery["summary"].splitlines()[0][:80]])
    table(rows, out)


def _print_events(items: list[dict[str, Any]], out: TextIO) -> None:
    rows = [["REV", "AT", "TYPE", "ACTOR", "ROLE", "OPERATION"]]
    for item in items:
        rows.append(
            [
                str(item["revision"]),
                item["at"][:19].replace("T", " "),
                item["type"],
                item["actor"],
                item["role"] or "-",
                item["operation_id"],
            ]
        )
    table(rows, out)


def cmd_status(args: argparse.Namespace, database: Database, out: TextIO, err: TextIO) -> int:
    """Show one ticket's three rails."""
    key = ticket_key(args.ticket, err)
    if key is None:
        return EXIT_USAGE
    if not ready(database, err):
        return EXIT_NOT_FOUND
    ticket = wire(database).tickets.load(key)
    if ticket is None:
        err.write(f"railyard: {args.ticket} is not a ticket (nothing recorded for it).\n")
        return EXIT_NOT_FOUND
    policy = None
    if args.json:  # the one output that shows blocked_by
        policies = rail_policies(args.settings, database, [key.repository], err)
        policy = policies.get(key.repository.casefold())
    summary = status_object(ticket, datetime.now(UTC), read_clocks(database, ticket), policy)
    if args.json:
        out.write(json.dumps(summary, indent=2) + "\n")
    else:
        _print_status(summary, out)
    return 0


def cmd_events(args: argparse.Namespace, database: Database, out: TextIO, err: TextIO) -> int:
    """Show one ticket's event log."""
    key = ticket_key(args.ticket, err)
    if key is None:
        return EXIT_USAGE
    if not ready(database, err):
        return EXIT_NOT_FOUND
    service = wire(database).tickets
    if service.load(key) is None:
        err.write(f"railyard: {args.ticket} is not a ticket (nothing recorded for it).\n")
        return EXIT_NOT_FOUND
    items = event_items(service.history(key), service.refusals(key))
    if args.json:
        out.write(json.dumps(items, indent=2) + "\n")
    else:
        _print_events(items, out)
    return 0


def cmd_resync(args: argparse.Namespace, database: Database, out: TextIO, err: TextIO) -> int:
    """Re-read a ticket's PRs, branches and deployments from GitHub and record what changed."""
    key = ticket_key(args.ticket, err)
    if key is None:
        return EXIT_USAGE
    if not ready(database, err):
        return EXIT_NOT_FOUND
    settings: Settings = args.settings
    if not settings.configured:
        err.write("railyard: resync needs the app's credentials (APP_ID, PRIVATE_KEY, WEBHOOK_SECRET).\n")
        return EXIT_USAGE
    try:
        recorded = asyncio.run(_resync(settings, database, key))
    except LookupError as error:
        err.write(f"railyard: {error}.\n")
        return EXIT_NOT_FOUND
    if recorded:
        out.write(f"railyard: {key}: recorded {len(recorded)} events: {', '.join(recorded)}.\n")
    else:
        out.write(f"railyard: {key}: nothing changed.\n")
    return 0


async def _resync(settings: Settings, database: Database, key: TicketKey) -> list[str]:
    # The shared limits and HTTP cache: a rate-limit pause another process stored holds here too.
    async with command_shell(settings, database) as shell:
        return await resync(shell.ports, key)


def register(commands: Any) -> None:
    """Add `status`, `events` and `resync`."""
    for name, handler in (("status", cmd_status), ("events", cmd_events)):
        sub = commands.add_parser(name)
        sub.add_argument("ticket", metavar="OWNER/REPO#N")
        sub.add_argument("--json", action="store_true", help="print JSON")
        sub.set_defaults(handler=handler)
    resync = commands.add_parser("resync")
    resync.add_argument("ticket", metavar="OWNER/REPO#N")
    resync.set_defaults(handler=cmd_resync)
