"""`railyard check`: claims silent past their limit or their deadline, deliveries waiting past
theirs for review; each recorded once (per silence period, attempt, delivery)."""

from __future__ import annotations

import argparse
import json
import os
from datetime import UTC, datetime, timedelta
from typing import Any, TextIO

from sqlalchemy.exc import DBAPIError

from app.bootstrap import wire
from app.cli.common import EXIT_NOT_FOUND, EXIT_OVERDUE, EXIT_USAGE, ready, repository_option, table
from app.runtime.watchdog import Clock, FailedTicket, watch_claims
from app.store.database import Database
from app.views.markdown import escape_inline


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
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00+14:00 is before the first moment a datetime holds in UTC
        err.write(
            f"railyard: --at {text!r} is out of range once in UTC; give a time between years 1 and 9999.\n"
        )
        return None


def _duration(span: timedelta) -> str:
    minutes = int(span.total_seconds() // 60)
    return f"{minutes // 60}h {minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def _check_rows(found: list[Clock]) -> list[list[str]]:
    return [
        [
            str(item.ticket),
            item.kind,
            item.person,
            str(item.attempt),
            _stamp(item.since),
            f"{item.limit_minutes} min",
            _stamp(item.due_at),
            _duration(item.overdue_by) if item.overdue else "-",
        ]
        for item in found
    ]


CHECK_HEADER = ["TICKET", "KIND", "WHO", "ATTEMPT", "SINCE", "LIMIT", "DUE AT", "OVERDUE BY"]


def _failed_lines(failed: list[FailedTicket]) -> list[str]:
    return [
        f"railyard: could not check {item.ticket} ({item.error}); it counts as overdue until it can be "
        "checked, and the server's log has the error."
        for item in failed
    ]


def check_summary(
    found: list[Clock], at: datetime, recorded: bool, failed: list[FailedTicket] | None = None
) -> str:
    """The Markdown appended to `$GITHUB_STEP_SUMMARY`."""
    lines = ["## railyard check", ""]
    when = at.strftime("%Y-%m-%d %H:%M UTC")
    for item in failed or []:
        lines += [f"Could not check {escape_inline(str(item.ticket))} ({escape_inline(item.error)}).", ""]
    if not found:
        return "\n".join([*lines, f"No claim is overdue and no delivery waits past its limit at {when}.", ""])
    lines.append(f"{len(found)} {'are' if len(found) > 1 else 'is'} overdue at {when}.")
    if not recorded:
        lines.append("Nothing was recorded: the time checked is in the future.")
    lines += [
        "",
        "| " + " | ".join(h.capitalize() for h in CHECK_HEADER) + " |",
        "|---" * len(CHECK_HEADER) + "|",
    ]
    lines += ["| " + " | ".join(escape_inline(cell) for cell in row) + " |" for row in _check_rows(found)]
    return "\n".join([*lines, ""])


def cmd_check(args: argparse.Namespace, database: Database, out: TextIO, err: TextIO) -> int:
    """Find claims past their silence limit or deadline and deliveries past their review wait, and
    record `claim_overdue` and `review_overdue` once each; `--all` lists every watched clock."""
    at = _check_time(args.at, err)
    valid, repository = repository_option(args.repo, err)
    if at is None or not valid:
        return EXIT_USAGE
    record = at <= datetime.now(UTC)  # a look into the future is a preview: nothing is recorded
    try:
        if not ready(database, err):
            return EXIT_NOT_FOUND
        # Recorded here, shown by the server: the overdue claim's status comment goes through the outbox.
        service = wire(database).tickets
        checked = watch_claims(database, service, at, repository=repository, record=record)
    except DBAPIError as error:
        err.write(f"railyard: could not read the database: {type(error.orig).__name__}.\n")
        return EXIT_NOT_FOUND
    found, failed = checked.due, checked.failed
    shown = checked.clocks if args.all else found
    err.writelines(line + "\n" for line in _failed_lines(failed))
    if args.json:
        items = [*(item.to_json() for item in shown), *(item.to_json() for item in failed)]
        out.write(json.dumps(items, indent=2) + "\n")
    elif shown:
        table([CHECK_HEADER, *_check_rows(shown)], out)
    if not args.json and not found:
        out.write(f"railyard: no claim is overdue and no delivery waits past its limit at {_stamp(at)}.\n")
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        with open(summary_path, "a", encoding="utf-8") as summary:
            summary.write(check_summary(found, at, record, failed))
    # A ticket that could not be checked may be overdue: it exits 3 like one that is, so a cron
    # job watching for 3 never stays green while a ticket goes unwatched.
    return EXIT_OVERDUE if found or failed else 0


def register(commands: Any) -> None:
    """Add `check`."""
    check = commands.add_parser(
        "check",
        description="Check every claimed ticket whose issue is open for silence past its limit and for "
        "its deadline (claims.max_attempt_hours), and every delivered one for a wait for review past "
        "reviews.max_wait_hours; record claim_overdue (once per silence period, once per attempt for "
        "the deadline) and review_overdue (once per delivery), as the server does every minute. "
        "The KIND column says which clock: silence, deadline or review. Exit 0 when "
        "nothing is overdue, 3 when something is or a ticket could not be checked (it is named on "
        "stderr, and the other tickets are still checked), 2 for bad input. Appends a Markdown summary to "
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
    check.add_argument(
        "--all",
        action="store_true",
        help="list every watched attempt and delivery with its due time and whether it is overdue, "
        "not only the overdue ones",
    )
    check.set_defaults(handler=cmd_check)
