"""The disk's side of intake: fsynced 13 KB webhook rows per second SQLite commits on its own.

Writes batches of stored `issue_comment` deliveries through `app.store.intake.write_batch` (the
intake writer's own path: WAL, synchronous=FULL, BEGIN IMMEDIATE) into a fresh database for a
few seconds per batch size, with no HTTP and no worker: the ceiling `bench/intake.py` is
measured against.

    python bench/sqlite_writes.py [--seconds 4]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.store.database import Database
from app.store.intake import IncomingDelivery, write_batch
from bench.intake import comment_payload


def rows_per_second(folder: Path, batch_size: int, seconds: float) -> tuple[float, float]:
    """(rows/s, commits/s) for batches of `batch_size` into a fresh migrated database."""
    database = Database(f"sqlite:///{folder}/writes-{batch_size}.db")
    database.migrate()
    body = comment_payload().decode()
    connection = database.engine.raw_connection()
    written, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        now = time.time()
        batch = [
            IncomingDelivery(
                f"d{written + i}",
                "issue_comment",
                "created",
                1,
                "acme/web",
                "issue:acme/web#1",
                "pending",
                body,
                len(body),
                now,
                now,
            )
            for i in range(batch_size)
        ]
        write_batch(database, batch, connection)
        written += batch_size
    elapsed = time.perf_counter() - started
    connection.close()
    database.close()
    return written / elapsed, written / batch_size / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=4.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for batch_size in (1, 8, 16, 32):
            rows, commits = rows_per_second(Path(folder), batch_size, args.seconds)
            print(f"batches of {batch_size:2d}: {rows:7.0f} rows/s, {commits:6.0f} commits/s", flush=True)


if __name__ == "__main__":
    main()
