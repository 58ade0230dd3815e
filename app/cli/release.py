"""`railyard tickets` and `railyard report`: the release owner's view on the command line."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, date, datetime, time
from typing import Any, TextIO

from app.cli.common import EXIT_NOT_FOUND, EXIT_USAGE, ready, repository_option, table
from app.cli.rail_policies import rail_policies
from app.store.database import Database
from app.store.listing import Listed, Listing
from app.views.status_json import status_with_attention
from policies.rails import RailPolicy
from policies.report_figures import Report
from policies.states import WorkState

_STATES = ", ".join(state.value for state in WorkState)


def _work_states(text: str | None, err: TextIO) -> tuple[bool, list[WorkState] | None]:
    """`--work STATE[,STATE...]`: the states, or a message naming the known ones."""
    if text is None:
        return True, None
    states = []
    for part in (p.strip() for p in text.split(",")):
        try:
            states.append(WorkState(part.casefold()))
        except ValueError:
            err.write(f"railyard: --work {part!r} is not a work state; use one of: {_STATES}.\n")
            return False, None
    return True, states


def ticket_item(listed: Listed, now: datetime, policy: RailPolicy | None = None) -> dict[str, Any]:
    """The `tickets --json` item: the `status --json` object with its `attention` codes
    (`blocked_by` judged under `policy`, the repository's)."""
    return status_with_attention(listed.ticket, listed.facts, now, policy)


def _show(value: Any) -> str:
    return "-" if value is None else str(value).replace("_", " ")


def _ticket_rows(items: list[dict[str, Any]]) -> list[list[str]]:
    rows = [["TICKET", "WORK", "REPOSITORY", "DEPLOYMENT", "RUNNER", "ATTENTION"]]
    for item in items:
        rows.append(
            [
                item["ticket"],
                _show(item["work"]),
                _show(item["integration"]),
                _show(item["deployment"]),
                f"@{item['runner']}" if item["runner"] else "-",
                ", ".join(item["attention"]) or "-",
            ]
        )
    return rows


def cmd_tickets(args: argparse.Namespace, database: Database, out: TextIO, err: TextIO) -> int:
    """List tickets with their three rails and attention codes, newest activity first."""
    valid_repo, repository = repository_option(args.repo, err)
    valid_work, work = _work_states(args.work, err)
    if not (valid_repo and valid_work):
        return EXIT_USAGE
    if not ready(database, err):
        return EXIT_NOT_FOUND
    now = datetime.now(UTC)
    listed = list(Listing(database).every(repository, work))
    policies: dict[str, RailPolicy] = {}
    if args.json:  # the one output that shows blocked_by
        policies = rail_policies(
            args.settings, database, (each.ticket.key.repository for each in listed), err
        )
    items = [ticket_item(each, now, policies.get(each.ticket.key.repository.casefold())) for each in listed]
    if args.attention:
        items = [item for item in items if item["attention"]]
    if args.json:
        out.write(json.dumps(items, indent=2) + "\n")
    elif items:
        table(_ticket_rows(items), out)
    else:
        out.write("railyard: no tickets match.\n")
    return 0


def since_option(text: str | None, err: TextIO) -> tuple[bool, datetime | None]:
    """`--since`: a date (midnight UTC) or an ISO-8601 time with a timezone; None when not given."""
    if text is None:
        return True, None
    given = text.strip()
    try:
        return True, datetime.combine(date.fromisoformat(given), time(), UTC)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(given.replace("Z", "+00:00"))
    except ValueError:
        err.write(
            f"railyard: --since {text!r} is not a date or time, e.g. 2026-11-01 or 2026-11-01T09:00:00Z.\n"
        )
        return False, None
    if moment.tzinfo is None:
        err.write(f"railyard: --since {text!r} has no timezone; add one, e.g. {given}Z for UTC.\n")
        return False, None
    try:
        return True, moment.astimezone(UTC)
    except OverflowError:  # 9999-12-31T23:00-14:00 is after the last moment a datetime holds in UTC
        err.write(
            f"railyard: --since {text!r} is out of range once in UTC; give a time between years 1 and 9999.\n"
        )
        return False, None


def _minutes(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _dollars(value: str | None) -> str:
    return "-" if value is None else f"${value}"


def _spend(item: dict[str, Any]) -> list[str]:
    return [
        str(item["input_tokens"]), str(item["output_tokens"]), _dollars(item["cost_usd"]),
        str(item["accepted_tickets"]), _dollars(item["cost_per_accepted_ticket"]),
    ]  # fmt: skip


_SPEND = ["TOKENS IN", "TOKENS OUT", "COST", "ACCEPTED TICKETS", "COST/ACCEPTED"]
_SPECIFIED = ["TICKETS", "DELIVERIES", "SENT BACK", "SEND-BACK RATE"]


def _specified(item: dict[str, Any]) -> list[str]:
    return [
        str(item["tickets"]),
        str(item["deliveries"]),
        str(item["sent_back"]),
        _rate(item["send_back_rate"]),
    ]


def _print_report(figures: dict[str, Any], out: TextIO) -> None:
    runners = [["RUNNER", "DELIVERIES", "ACCEPTED", "SENT BACK", "REOPENED", "SEND-BACK RATE",
                "CLAIM→DELIVERY (MIN)", "DELIVERY→ACCEPT (MIN)", *_SPEND]]  # fmt: skip
    for r in figures["runners"]:
        runners.append([
            f"@{r['runner']}", str(r["deliveries"]), str(r["accepted"]), str(r["sent_back"]),
            str(r["reopened"]), _rate(r["send_back_rate"]), _minutes(r["median_minutes_claim_to_delivery"]),
            _minutes(r["median_minutes_delivery_to_acceptance"]), *_spend(r),
        ])  # fmt: skip
    reviewers = [["REVIEWER", "DECISIONS", "ACCEPTED", "SENT BACK", "OVERRIDES", "SELF-VERIFIED"]]
    for v in figures["reviewers"]:
        reviewers.append([
            f"@{v['reviewer']}", str(v["decisions"]), str(v["accepted"]), str(v["sent_back"]),
            str(v["overrides"]), str(v["self_verified"]),
        ])  # fmt: skip
    models = [["MODEL", "DELIVERIES", *_SPEND]]
    models += [[m["model"] or "(none reported)", str(m["deliveries"]), *_spend(m)] for m in figures["models"]]
    requesters = [["REQUESTER", *_SPECIFIED]]
    requesters += [[f"@{r['requester']}", *_specified(r)] for r in figures["requesters"]]
    labels = [["LABEL", *_SPECIFIED]]
    labels += [[b["label"] or "(no label recorded)", *_specified(b)] for b in figures["labels"]]
    sections = (
        ("Runners", runners),
        ("Reviewers", reviewers),
        ("Models (as reported by the runners)", models),
        ("Requesters", requesters),
        ("Labels", labels),
    )
    for title, rows in sections:
        out.write(f"{title}\n")
        if len(rows) > 1:
            table(rows, out)
        else:
            out.write("  none in this period\n")


def cmd_report(args: argparse.Namespace, database: Database, out: TextIO, err: TextIO) -> int:
    """Per runner and per reviewer figures since a date, from the event log."""
    valid_repo, repository = repository_option(args.repo, err)
    valid_since, since = since_option(args.since, err)
    if not (valid_repo and valid_since):
        return EXIT_USAGE
    if not ready(database, err):
        return EXIT_NOT_FOUND
    figures: Report = Listing(database).report(repository, since)
    if args.json:
        out.write(json.dumps(figures.to_json(), indent=2) + "\n")
    else:
        _print_report(figures.to_json(), out)
    return 0


def register(commands: Any) -> None:
    """Add `tickets` and `report`."""
    tickets = commands.add_parser("tickets")
    tickets.add_argument("--repo", metavar="OWNER/REPO", help="only this repository")
    tickets.add_argument(
        "--work", metavar="STATE", help=f"only these work states, comma-separated: {_STATES}"
    )
    tickets.add_argument("--attention", action="store_true", help="only tickets with an attention code")
    tickets.add_argument(
        "--json", action="store_true", help="print JSON: status --json objects with attention"
    )
    tickets.set_defaults(handler=cmd_tickets)
    report = commands.add_parser("report")
    report.add_argument("--repo", metavar="OWNER/REPO", help="only this repository")
    report.add_argument(
        "--since", metavar="DATE", help="from this date (UTC midnight) or ISO-8601 time with a timezone"
    )
    report.add_argument(
        "--json", action="store_true", help='print JSON: {"runners": [...], "reviewers": [...]}'
    )
    report.set_defaults(handler=cmd_report)
