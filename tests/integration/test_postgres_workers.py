"""Three `railyard worker` processes share one PostgreSQL queue."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest
from sqlalchemy import func, select

from app.store.database import Database
from app.store.installations import installation_repositories
from app.store.intake import IncomingDelivery, write_batch
from app.store.queue import deliveries, queue_depth, runs
from tests.conftest import _empty
from tests.fakes import example

DELIVERIES = 2000
INSTALLATIONS = 40
WORKERS = 3


def added(number: int) -> IncomingDelivery:
    """A stored `installation_repositories.added` delivery for one of 40 installations."""
    installation = 1000 + number % INSTALLATIONS
    payload = json.loads(example("api.github.com", "installation_repositories", "01-added.json"))
    payload["installation"]["id"] = installation
    payload["repositories_added"] = [{"id": number, "name": f"r{number}", "full_name": f"pg/r{number}"}]
    payload["repositories_removed"] = []
    now = time.time()
    return IncomingDelivery(
        delivery_id=f"pg-{number}",
        event="installation_repositories",
        action="added",
        installation_id=installation,
        repository=None,
        ordering_key=f"installation:{installation}",
        status="pending",
        payload=json.dumps(payload),
        payload_bytes=0,
        received_at=now,
        next_attempt_at=now,
    )


@pytest.mark.postgres
def test_three_worker_processes_drain_2000_deliveries_each_exactly_once(
    postgres_database: Database, tmp_path: Path
) -> None:
    """No delivery runs twice, all are done, and each installation's deliveries run in order."""
    database = postgres_database
    _empty(database)
    for start in range(0, DELIVERIES, 250):
        write_batch(database, [added(n) for n in range(start, start + 250)])
    railyard = str(Path(sys.executable).parent / "railyard")
    env = {**os.environ, "DATABASE_URL": database.url}
    workers = [
        subprocess.Popen([railyard, "worker", "--concurrency", "8"], env=env, cwd=tmp_path,
                         stdout=subprocess.DEVNULL, stderr=(tmp_path / f"worker-{i}.log").open("wb"))
        for i in range(WORKERS)
    ]  # fmt: skip
    try:
        deadline = time.time() + 120
        while queue_depth(database)[0] and time.time() < deadline:
            time.sleep(0.2)
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        for worker in workers:
            assert worker.wait(timeout=30) == 0, (tmp_path / "worker-0.log").read_text()[-2000:]

    with database.read() as connection:
        statuses = dict(
            connection.execute(select(deliveries.c.status, func.count()).group_by(deliveries.c.status)).all()
        )
        all_runs = connection.execute(
            select(runs.c.delivery_seq, runs.c.worker, runs.c.started_at, runs.c.outcome, runs.c.lease_kept)
        ).all()
        repositories = connection.execute(
            select(func.count()).select_from(installation_repositories)
        ).scalar_one()
        keys = dict(connection.execute(select(deliveries.c.seq, deliveries.c.ordering_key)).all())
    assert statuses == {"done": DELIVERIES}
    assert len(all_runs) == DELIVERIES, "some delivery ran more than once"
    assert all(run.outcome == "done" and run.lease_kept for run in all_runs)
    assert len({run.worker for run in all_runs}) == WORKERS, "every worker took part"
    assert repositories == DELIVERIES
    by_key: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for run in all_runs:
        by_key[keys[run.delivery_seq]].append((run.delivery_seq, run.started_at))
    for key, started in by_key.items():
        in_seq_order = [seq for seq, _ in sorted(started, key=lambda item: item[1])]
        assert in_seq_order == sorted(in_seq_order), f"{key} ran out of order"
