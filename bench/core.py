"""Transitions per second through the ticket service, on a SQLite file and on PostgreSQL.

Each ticket goes publish -> claim -> deliver -> send-back -> deliver -> accept: six
transitions (seven events), each one durable (SQLite WAL + synchronous=FULL, PostgreSQL
synchronous_commit=on) before `execute` returns. Also prints this process's CPU per transition
(the door's own cost: its statements and the core's decision; the database server's not counted).

    python bench/core.py                                  # SQLite file in a temp dir
    python bench/core.py --postgres postgresql+psycopg://railyard:railyard@127.0.0.1:5432/railyard_test
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.store.database import Database
from app.store.tickets import TicketService
from policies.commands import Accept, Claim, Command, Deliver, Publish, SendBack
from policies.model import Actor, TicketKey
from support.comments import REQUESTER, REVIEWER, RUNNER, Comments
from support.databases import reset_schema

TRANSITIONS_PER_TICKET = 6


def lifecycle(number: int) -> list[tuple[Command, Actor]]:
    """The six transitions one ticket goes through."""
    return [
        (Publish("Benchmark ticket"), REQUESTER),
        (Claim(branch=f"agent/{number}"), RUNNER),
        (Deliver("First try", branch=f"agent/{number}", commit=f"{number:039x}a"), RUNNER),
        (SendBack("Needs a test"), REVIEWER),
        (Deliver("With a test", branch=f"agent/{number}", commit=f"{number:039x}b"), RUNNER),
        (Accept(), REVIEWER),
    ]


def run_tickets(service: TicketService, repository: str, numbers: range) -> int:
    """Drive tickets through their lifecycle; return how many transitions applied."""
    comments, applied = Comments(), 0
    for number in numbers:
        key = TicketKey(repository, number)
        for command, actor in lifecycle(number):
            outcome = service.execute(key, command, comments.context(actor))
            applied += outcome.applied
    return applied


def measure(database: Database, tickets: int, threads: int, label: str) -> None:
    """Run the workload with `threads` writers and print transitions per second."""
    service = TicketService(database)
    repository = f"bench/{label}-{threads}-{time.time_ns()}"
    per_thread = tickets // threads
    chunks = [range(i * per_thread + 1, (i + 1) * per_thread + 1) for i in range(threads)]
    started, cpu = time.perf_counter(), time.process_time()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        applied = sum(pool.map(lambda chunk: run_tickets(service, repository, chunk), chunks))
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    expected = per_thread * threads * TRANSITIONS_PER_TICKET
    assert applied == expected, f"only {applied} of {expected} transitions applied"
    print(
        f"{label:<10} threads={threads}  transitions={applied:>6}  "
        f"seconds={elapsed:6.2f}  transitions/s={applied / elapsed:8.0f}  "
        f"ms/transition={1000 * elapsed / applied:5.2f}  CPU ms/transition={1000 * cpu / applied:5.2f}"
    )


def main() -> None:
    """Parse arguments, run each database, print one line per run."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tickets", type=int, default=1000)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--postgres", help="PostgreSQL URL (its public schema is reset!)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        sqlite = Database(f"sqlite:///{folder}/bench.db")
        sqlite.migrate()
        for threads in args.threads:
            measure(sqlite, args.tickets, threads, "sqlite")
        sqlite.close()
    if args.postgres:
        postgres = Database(args.postgres)
        reset_schema(postgres)
        postgres.migrate()
        for threads in args.threads:
            measure(postgres, args.tickets, threads, "postgresql")
        postgres.close()


if __name__ == "__main__":
    main()
