"""What sharing GitHub's per-installation limits through the database costs.

Every GitHub call first reads its installation's pause (one primary-key SELECT), and every
content-creating write claims its slot (one conditional UPDATE, durable). Prints the median
and p99 of each on SQLite (a fresh file) and, with `--postgres URL`, on PostgreSQL.

    python bench/limits.py [--calls 2000] [--postgres postgresql+psycopg://...]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.store.database import Database
from app.store.limits import SharedLimits


async def timings(database: Database, calls: int) -> dict[str, list[float]]:
    """Milliseconds per pause read and per write-slot claim."""
    limits = SharedLimits(database)
    seen: dict[str, list[float]] = {"pause read": [], "slot claim": []}
    for i in range(calls):
        started = time.perf_counter()
        await limits.paused_until(7, time.time())
        seen["pause read"].append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        await limits.claim_write(7, 1_000_000.0 + i, 1.0)
        seen["slot claim"].append((time.perf_counter() - started) * 1000)
    return seen


def report(name: str, seen: dict[str, list[float]]) -> None:
    """Print median and p99 per operation."""
    for operation, values in seen.items():
        values.sort()
        p99 = values[int(len(values) * 0.99) - 1]
        print(f"{name:10} {operation:11} median {statistics.median(values):6.3f} ms   p99 {p99:6.3f} ms")


def main() -> None:
    """Run on SQLite, then PostgreSQL when given."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--postgres")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        database = Database(f"sqlite:///{folder}/limits.db")
        database.migrate()
        report("sqlite", asyncio.run(timings(database, args.calls)))
        database.close()
    if args.postgres:
        database = Database(args.postgres)
        database.migrate()
        report("postgres", asyncio.run(timings(database, args.calls)))
        database.close()


if __name__ == "__main__":
    main()
