"""The `railyard` command line."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TextIO

from sqlalchemy.exc import DBAPIError

from app.logs import configure_logging
from app.runtime.watchdog import OverdueClaim, check_claims
from app.settings import Settings
from app.store.database import Database
from app.store.queue import list_deliveries, requeue
from app.store.tickets import TicketService
from app.views.markdown import escape_inline
from app.views.surfaces import surfaces_for
from policies.model import Ticket, TicketKey

EXIT_NOT_FOUND = 1
EXIT_USAGE = 2
EXIT_OVERDUE = 3


def ticket_summary(ticket: Ticket) -> dict[str, Any]:
    """The `status --json` shape."""
    delivery = ticket.last_delivery
    runner = ticket.claimant or (delivery.runner if delivery else None)
    runner_id = ticket.claimant_id if ticket.claimant else (delivery.runner_id if delivery else None)
    return {
        "ticket": str(ticket.key),
        "work": ticket.work.value if ticket.work else None,
        "integration": ticket.rails.integration.value,
        "deployment": ticket.rails.deployment.value,
        "deployments": {env: state.value for env, state in ticket.rails.deployments.items()},
        "revision": ticket.revision,
        "attempt": ticket.attempt,
        "runner": runner,
        "runner_id": runner_id,
        "claimant": ticket.claimant,
        "claimant_id": ticket.claimant_id,
        "owner": ticket.owner,
        "owner_id": ticket.owner_id,
        "no_code": ticket.no_code,
        "review": ticket.review.kind.value if ticket.review else None,
        "reviewer": ticket.review.reviewer if ticket.review else None,
        "reviewer_id": ticket.review.reviewer_id if ticket.review else None,
        "delivery": _delivery(ticket),
        "merge_commit": ticket.rails.merge_commit,
    }


def _delivery(ticket: Ticket) -> dict[str, Any] | None:
    delivery = ticket.last_delivery
    if delivery is None:
        return None
    return {
        "attempt": delivery.attempt,
        "runner": delivery.runner,
        "runner_id": delivery.runner_id,
        "summary": delivery.summary,
        "branch": delivery.branch,
        "commit": delivery.commit,
        "pull_request": delivery.pull_request,
        "artifacts": list(delivery.artifacts),
        "operation_id": delivery.operation_id,
        "at": delivery.at.isoformat(),
    }


def event_items(service: TicketService, key: TicketKey) -> list[dict[str, Any]]:
    """The `events --json` shape: the event log, with refused commands as `command_rejected`."""
    items = [
        {
            "revision": recorded.revision,
            "type": recorded.event.type.value,
            "actor": recorded.event.actor,
            "actor_id": recorded.event.actor_id,
            "role": recorded.event.role,
            "at": recorded.event.at.isoformat(),
            "operation_id": recorded.event.operation_id,
            "policy_version": recorded.event.policy_version,
            "metadata": dict(recorded.event.data),
        }
        for recorded in service.history(key)
    ]
    for refused in service.refusals(key):
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


def _table(rows: list[list[str]], out: TextIO) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
        out.write("\n")


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
    _table(rows, out)


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
    _table(rows, out)


def _ready(database: Database, err: TextIO) -> bool:
    if database.has_schema():
        return True
    err.write("railyard: the database has no railyard tables yet; run `railyard migrate` first.\n")
    return False


def _ticket_key(text: str, err: TextIO) -> TicketKey | None:
    try:
        return TicketKey.parse(text)
    except ValueError as error:
        err.write(f"railyard: {error}\n")
        return None


def cmd_migrate(args: argparse.Namespace, database: Database, out: TextIO, err: TextIO) -> int:
    """Bring the schema up to date."""
    database.migrate()
    out.write("railyard: database is up to date.\n")
    return 0


def cmd_status(args: argparse.Namespace, database: Database, out: TextIO, err: TextIO) -> int:
    """Show one ticket's three rails."""
    key = _ticket_key(args.ticket, err)
    if key is None:
        return EXIT_USAGE
    if not _ready(database, err):
        return EXIT_NOT_FOUND
    ticket = TicketService(database).load(key)
    if ticket is None:
        err.write(f"railyard: {args.ticket} is not a ticket (nothing recorded for it).\n")
        return EXIT_NOT_FOUND
    summary = ticket_summary(ticket)
    if args.json:
        out.write(json.dumps(summary, indent=2) + "\n")
    else:
        _print_status(summary, out)
    return 0


def cmd_events(args: argparse.Namespace, database: Database, out: TextIO, err: TextIO) -> int:
    """Show one ticket's event log."""
    key = _ticket_key(args.ticket, err)
    if key is None:
        return EXIT_USAGE
    if not _ready(database, err):
        return EXIT_NOT_FOUND
    service = TicketService(database)
    if service.load(key) is None:
        err.write(f"railyard: {args.ticket} is not a ticket (nothing recorded for it).\n")
        return EXIT_NOT_FOUND
    items = event_items(service, key)
    if args.json:
        out.write(json.dumps(items, indent=2) + "\n")
    else:
        _print_events(items, out)
    return 0


def cmd_deliveries(args: argparse.Namespace, database: Database, out: TextIO, err: TextIO) -> int:
    """List stored webhook deliveries, newest first."""
    if not _ready(database, err):
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
    _table(rows, out)
    return 0


def cmd_redeliver(args: argparse.Namespace, database: Database, out: TextIO, err: TextIO) -> int:
    """Process stored deliveries again (safe: every change is keyed by its operation id)."""
    if not _ready(database, err):
        return EXIT_NOT_FOUND
    found = requeue(database, args.ids, time.time())
    for delivery_id in found:
        out.write(f"railyard: {delivery_id} queued again.\n")
    missing = [i for i in args.ids if i not in found]
    for delivery_id in missing:
        err.write(f"railyard: {delivery_id} is not stored here (or its payload has expired).\n")
    return 0 if not missing else EXIT_NOT_FOUND


def cmd_resync(args: argparse.Namespace, database: Database, out: TextIO, err: TextIO) -> int:
    """Re-read a ticket's PRs, branches and deployments from GitHub and record what changed."""
    key = _ticket_key(args.ticket, err)
    if key is None:
        return EXIT_USAGE
    if not _ready(database, err):
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
    from app.bootstrap import wire
    from app.github.client import GitHubClient
    from app.runtime.metrics import Metrics
    from handlers.resync import resync

    github = GitHubClient(settings, Metrics())
    await github.start()
    try:
        return await resync(wire(database, github=github, app_id=settings.app_id).ports, key)
    finally:
        await github.close()


def _check_time(text: str | None, err: TextIO) -> datetime | None:
    """`--at`: an ISO-8601 time with a timezone (a time without one is refused, not guessed)."""
    if text is None:
        return datetime.now(UTC)
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        err.write(f"railyard: --at {text!r} is not an ISO-8601 time, e.g. 2026-11-30T12:00:00Z.\n")
        return None
    if moment.tzinfo is None:
        err.write(
            f"railyard: --at {text!r} has no timezone; add one, e.g. {text.strip()}Z for UTC or +02:00.\n"
        )
        return None
    return moment.astimezone(UTC)


def _repository(text: str | None, err: TextIO) -> tuple[bool, str | None]:
    if text is None:
        return True, None
    owner, slash, name = text.strip().partition("/")
    if not slash or not owner or not name or "/" in name or "#" in text:
        err.write(f"railyard: --repo expects OWNER/REPO, got {text!r}.\n")
        return False, None
    return True, text.strip()


def _duration(span: timedelta) -> str:
    minutes = int(span.total_seconds() // 60)
    return f"{minutes // 60}h {minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"


def _check_rows(found: list[OverdueClaim]) -> list[list[str]]:
    return [
        [
            str(item.ticket),
            item.silence.claimant,
            str(item.silence.attempt),
            item.silence.silent_since.strftime("%Y-%m-%d %H:%M UTC"),
            f"{item.silence.limit_minutes} min",
            _duration(item.overdue_by),
        ]
        for item in found
    ]


CHECK_HEADER = ["TICKET", "CLAIMANT", "ATTEMPT", "SILENT SINCE", "LIMIT", "OVERDUE BY"]


def check_summary(found: list[OverdueClaim], at: datetime, recorded: bool) -> str:
    """The Markdown appended to `$GITHUB_STEP_SUMMARY`."""
    lines = ["## railyard check", ""]
    when = at.strftime("%Y-%m-%d %H:%M UTC")
    if not found:
        return "\n".join([*lines, f"No claim is overdue at {when}.", ""])
    lines.append(f"{len(found)} claim{'s are' if len(found) > 1 else ' is'} overdue at {when}.")
    if not recorded:
        lines.append("Nothing was recorded: the time checked is in the future.")
    lines += ["", "| " + " | ".join(h.capitalize() for h in CHECK_HEADER) + " |", "|---" * 6 + "|"]
    lines += ["| " + " | ".join(escape_inline(cell) for cell in row) + " |" for row in _check_rows(found)]
    return "\n".join([*lines, ""])


def cmd_check(args: argparse.Namespace, database: Database, out: TextIO, err: TextIO) -> int:
    """Find claims silent past their limit, record `claim_overdue` once per silence period."""
    at = _check_time(args.at, err)
    valid, repository = _repository(args.repo, err)
    if at is None or not valid:
        return EXIT_USAGE
    record = at <= datetime.now(UTC)  # a look into the future is a preview: nothing is recorded
    try:
        if not _ready(database, err):
            return EXIT_NOT_FOUND
        # Recorded here, shown by the server: the overdue claim's status comment goes through the outbox.
        service = TicketService(database, surfaces=surfaces_for)
        found = check_claims(database, service, at, repository=repository, record=record)
    except DBAPIError as error:
        err.write(f"railyard: could not read the database: {type(error.orig).__name__}.\n")
        return EXIT_NOT_FOUND
    if args.json:
        out.write(json.dumps([item.to_json() for item in found], indent=2) + "\n")
    elif found:
        _table([CHECK_HEADER, *_check_rows(found)], out)
    else:
        out.write(f"railyard: no claim is overdue at {at.strftime('%Y-%m-%d %H:%M UTC')}.\n")
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        with open(summary_path, "a", encoding="utf-8") as summary:
            summary.write(check_summary(found, at, record))
    return EXIT_OVERDUE if found else 0


Handler = Callable[[argparse.Namespace, Database, TextIO, TextIO], int]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, one sub-command per job."""
    parser = argparse.ArgumentParser(prog="railyard", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("migrate", help="create or upgrade the database schema").set_defaults(
        handler=cmd_migrate
    )
    for name, handler, help_text in (
        ("status", cmd_status, "show a ticket's work, repository and deployment rails"),
        ("events", cmd_events, "show a ticket's event log"),
    ):
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("ticket", metavar="OWNER/REPO#N")
        sub.add_argument("--json", action="store_true", help="print JSON")
        sub.set_defaults(handler=handler)
    resync = commands.add_parser(
        "resync", help="re-read a ticket's PRs, branches and deployments from GitHub"
    )
    resync.add_argument("ticket", metavar="OWNER/REPO#N")
    resync.set_defaults(handler=cmd_resync)
    deliveries = commands.add_parser("deliveries", help="list stored webhook deliveries")
    deliveries.add_argument("--status", choices=["pending", "done", "ignored", "failed", "rejected"])
    deliveries.add_argument("--limit", type=int, default=100)
    deliveries.add_argument("--json", action="store_true", help="print JSON")
    deliveries.set_defaults(handler=cmd_deliveries)
    redeliver = commands.add_parser("redeliver", help="process stored webhook deliveries again")
    redeliver.add_argument("ids", nargs="+", metavar="ID", help="X-GitHub-Delivery id")
    redeliver.set_defaults(handler=cmd_redeliver)
    check = commands.add_parser(
        "check",
        help="find claims silent past their limit (exit 3 when one is)",
        description="Check every claimed ticket whose issue is open for silence past its limit, and "
        "record claim_overdue once per silence period, as the server does every minute. Exit 0 when "
        "nothing is overdue, 3 when something is, 2 for bad input. Appends a Markdown summary to "
        "$GITHUB_STEP_SUMMARY when that variable is set.",
    )
    check.add_argument("--repo", metavar="OWNER/REPO", help="only this repository")
    check.add_argument(
        "--at",
        metavar="ISO-8601",
        help="check as of this time instead of now; it must carry a timezone (Z or +HH:MM): a time "
        "without one is refused, never guessed. A time in the future only previews: nothing is recorded.",
    )
    check.add_argument("--json", action="store_true", help="print JSON")
    check.set_defaults(handler=cmd_check)
    commands.add_parser("serve", help="run the web server, worker and outbox").set_defaults(handler=None)
    worker = commands.add_parser("worker", help="run an extra worker process (PostgreSQL)")
    worker.add_argument("--concurrency", type=int, default=4)
    worker.set_defaults(handler=None)
    return parser


def main(
    argv: Sequence[str] | None = None,
    settings: Settings | None = None,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    """Run one `railyard` command and return its exit status."""
    args = build_parser().parse_args(argv)
    settings = settings or Settings()
    if args.command in ("serve", "worker"):
        from app.runtime.runner import run_server, run_worker

        configure_logging()
        return run_server(settings) if args.command == "serve" else run_worker(settings, args.concurrency)
    database = Database(settings.database_url)
    args.settings = settings
    try:
        handler: Handler = args.handler
        return handler(args, database, out, err)
    finally:
        database.close()


if __name__ == "__main__":
    sys.exit(main())
