"""Three `railyard worker` processes share one PostgreSQL queue."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.engine import make_url

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


@pytest.mark.postgres
def test_a_worker_has_its_connections_open_once_it_says_it_started(
    postgres_database: Database, tmp_path: Path
) -> None:
    """`railyard worker --concurrency 2` opens its connections before it takes work: two in the
    engine's pool and two in each of the event loop's sets (`Database.open_connections`)."""
    name = f"worker-{uuid.uuid4().hex[:10]}"
    named = make_url(postgres_database.url).update_query_dict({"application_name": name})
    env = {**os.environ, "DATABASE_URL": named.render_as_string(hide_password=False)}
    railyard, log = str(Path(sys.executable).parent / "railyard"), tmp_path / "worker.log"
    with log.open("wb") as out:
        worker = subprocess.Popen(
            [railyard, "worker", "--concurrency", "2"], env=env, cwd=tmp_path, stdout=out, stderr=out
        )
    try:
        deadline = time.time() + 60
        while "worker started" not in log.read_text():
            assert worker.poll() is None and time.time() < deadline, log.read_text()[-2000:]
            time.sleep(0.1)
        with postgres_database.read() as connection:
            opened = connection.execute(
                text("SELECT count(*) FROM pg_stat_activity WHERE application_name = :name"), {"name": name}
            ).scalar_one()
        assert opened >= 6
    finally:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=30) == 0, log.read_text()[-2000:]
