"""One page of the release owner's listing over a 10,000-ticket repository on SQLite.

The tickets are written through the one door (`execute_in`, batched into transactions of a
few hundred changes so filling takes seconds, not the hour of one fsync per change): a mix of
open, claimed (some recorded overdue by the watchdog), delivered (some with a merged PR),
sent-back and accepted tickets, plus 2,000 tickets of another repository. Then, for each kind
of page, the time of the page's one statement plus building its JSON items (status object and
attention codes, what `railyard tickets --json` prints and the board renders from), as p50
and p95 over `--runs` runs, beside two references measured in the same run: a bare
`select 1` and loading one ticket by its key.

    python bench/board.py [--tickets 10000] [--runs 200] [--page 50]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import text

from app.cli.release import ticket_item
from app.store.database import Database
from app.store.listing import list_tickets
from app.store.tickets import execute_in, load
from policies.commands import Accept, Claim, Deliver, Publish, SendBack
from policies.model import TicketKey
from policies.notices import WATCHDOG_ACTOR, NoticeContext, OverdueObserved, overdue_operation_id
from policies.rails import ObservationContext, PullRequestObserved
from policies.states import WorkState
from support.comments import REQUESTER, REVIEWER, RUNNER, Comments

REPO, OTHER = "bench/board", "bench/other"


def _changes(number: int, comments: Comments) -> list[tuple[object, object]]:
    """The changes one ticket goes through, chosen by its number (a steady mix of states)."""
    kind = number % 10
    steps: list[tuple[object, object]] = [(Publish("Benchmark ticket"), comments.context(REQUESTER))]
    if kind == 0:
        return steps
    claim = comments.context(RUNNER)
    steps.append((Claim(check_in_minutes=30), claim))
    if kind == 1:
        notice = OverdueObserved(1, RUNNER.login, claim.at, 30)
        op = overdue_operation_id(REPO, number, 1, claim.at)
        steps.append((notice, NoticeContext(WATCHDOG_ACTOR, op, claim.at + timedelta(hours=1))))
    if kind <= 2:
        return steps
    steps.append((Deliver("First try", commit=f"{number:039x}a"), comments.context(RUNNER)))
    if kind in (4, 5):
        steps.append((SendBack("Needs a test"), comments.context(REVIEWER)))
        steps.append((Deliver("With a test", commit=f"{number:039x}b"), comments.context(RUNNER)))
    if kind >= 6:
        steps.append((Accept(), comments.context(REVIEWER)))
    if kind in (3, 7, 8):
        at = comments.clock()
        head = f"{number:039x}a"
        pull = PullRequestObserved(
            number, f"https://x/pull/{number}", True, False, True, head, "b", "d" * 40, at, True
        )
        steps.append((pull, ObservationContext("github", f"merge-{number}", at)))
    return steps


def fill(database: Database, repository: str, tickets: int, batch: int = 200) -> None:
    """Write `tickets` tickets of `repository` through the one door, `batch` tickets a transaction."""
    comments = Comments()
    for start in range(1, tickets + 1, batch):
        with database.write() as connection:
            for number in range(start, min(start + batch, tickets + 1)):
                key = TicketKey(repository, number)
                for change, context in _changes(number, comments):
                    execute_in(connection, key, change, context, surfaces=None)  # type: ignore[arg-type]


def timed(runs: int, work: Callable[[], object]) -> tuple[float, float]:
    """p50 and p95 in milliseconds of `work` over `runs` runs (after one warm-up)."""
    work()
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.95) - 1]


def page_render(database: Database, size: int, **filters: object) -> Callable[[], object]:
    """One page read in its one statement, then its JSON items built and serialised."""

    def work() -> object:
        now = datetime.now(UTC)
        with database.read() as connection:
            page = list_tickets(connection, limit=size, **filters)  # type: ignore[arg-type]
        return json.dumps([ticket_item(item, now) for item in page.items])

    return work


def main() -> None:
    """Fill a SQLite file, then print p50/p95 of each page kind and of the references."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tickets", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--page", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        database = Database(f"sqlite:///{directory}/board.db")
        database.migrate()
        started = time.perf_counter()
        fill(database, REPO, args.tickets)
        fill(database, OTHER, args.tickets // 5)
        print(f"filled {args.tickets} + {args.tickets // 5} tickets in {time.perf_counter() - started:.1f} s")
        with database.read() as connection:
            events = connection.execute(text("select count(*) from ticket_events")).scalar_one()
            first = list_tickets(connection, repository=REPO, limit=args.page)
        print(f"{events} events; page size {args.page}")

        def select_one() -> object:
            with database.read() as connection:
                return connection.execute(text("select 1")).scalar_one()

        def one_ticket() -> object:
            with database.read() as connection:
                return load(connection, TicketKey(REPO, args.tickets // 2))

        def statement_only() -> object:
            with database.read() as connection:
                return list_tickets(connection, repository=REPO, limit=args.page)

        cases: list[tuple[str, Callable[[], object]]] = [
            ("reference: select 1", select_one),
            ("reference: load one ticket", one_ticket),
            ("first page, statement + fold only", statement_only),
            ("first page, repository", page_render(database, args.page, repository=REPO)),
            ("first page, repository + count", page_render(database, args.page, repository=REPO, count=True)),
            (
                "first page, delivered column",
                page_render(database, args.page, repository=REPO, work=[WorkState.DELIVERED]),
            ),
            ("first page, all repositories", page_render(database, args.page)),
            ("second page by cursor", page_render(database, args.page, repository=REPO, after=first.next)),
            ("page at offset 5000", page_render(database, args.page, repository=REPO, offset=5000)),
        ]
        for label, work in cases:
            p50, p95 = timed(args.runs, work)
            print(f"{label:<34} p50 {p50:7.2f} ms   p95 {p95:7.2f} ms")
        database.close()


if __name__ == "__main__":
    main()
