"""CPU per statement on the event loop's PostgreSQL connections (`app.store.loop_statements`).

Every GitHub call is preceded by one such read (the rate-limit pause), and many of the writes
around a command are one such statement each (a budget, a write slot, a lease). On a fresh
database in a private PostgreSQL cluster (bench/postgres_cluster.py, fsync on), this runs
`--count` pause reads (`Database.point_read_here`) in a row, then as many one-row upserts
(`Database.write_here`), `--rounds` times each, and prints the CPU microseconds of this process
per statement for each round and their median. The server's own CPU is not counted.

Compare two commits by running each from its own tree (`PYTHONPATH=<tree> python
<tree>/bench/loop_statements.py`), alternating.

    python bench/loop_statements.py [--count 2000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.cli.processes import _event_loop_policy
from app.store import limits
from app.store.database import Database
from bench.postgres_cluster import PrivateCluster


async def per_statement(call: Callable[[], Awaitable[object]], count: int) -> float:
    """CPU microseconds of this process per `call()`, over `count` calls in a row."""
    started = time.process_time()
    for _ in range(count):
        await call()
    return (time.process_time() - started) / count * 1e6


async def main(count: int, rounds: int) -> None:
    cluster = PrivateCluster()
    await asyncio.to_thread(cluster.start)
    try:
        database = Database(await asyncio.to_thread(cluster.create_database, "loop_statements"))
        await asyncio.to_thread(database.migrate)
        upsert = limits._MOVE_PAUSE.format(later="greatest")
        statements: dict[str, Callable[[], Awaitable[object]]] = {
            "point read (the pause)": lambda: database.point_read_here(limits._PAUSE, (7,)),
            "one-row upsert": lambda: database.write_here(upsert, (7, 1.0)),
        }
        await per_statement(
            statements["point read (the pause)"], 200
        )  # connections opened, statements prepared
        for label, call in statements.items():
            figures = [await per_statement(call, count) for _ in range(rounds)]
            shown = ", ".join(f"{figure:.0f}" for figure in figures)
            print(
                f"{label:<24} {shown} µs of CPU a statement; median {statistics.median(figures):.0f}",
                flush=True,
            )
        database.close()
    finally:
        await asyncio.to_thread(cluster.stop)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if args.count < 1 or args.rounds < 1:
        parser.error("--count and --rounds must be 1 or more")
    _event_loop_policy()
    asyncio.run(main(args.count, args.rounds))
