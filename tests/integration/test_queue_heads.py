"""`pull_requests.queue_heads` (migration 0032) under two `merge_group` deliveries at once."""

from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import insert, select

from app.store.database import Database
from app.store.queue_heads import note_queue_head, pull_requests

REPO = "acme/web"
KEPT, EARLIER, LATER = "a" * 40, "b" * 40, "c" * 40


@pytest.mark.postgres
def test_two_queue_commits_noted_at_once_are_both_kept(database: Database) -> None:
    """PR #34 is queued; GitHub rebuilds its group commit as the PR ahead leaves the queue, and
    two `checks_requested` (b…b, c…c) are processed at once by two workers (PostgreSQL, READ
    COMMITTED). Each unit reads the kept list ([a…a]), the second's UPDATE waits for the first's
    row lock, then writes its own list computed from the old read: b…b is lost. A change to #12
    while #34 waits writes a…a and c…c again, never b…b: if the queue merges on b…b, it merges on
    the success written before the change (docs/what-people-see.md: the last five are written)."""
    if database.is_sqlite:
        pytest.skip("SQLite has one writer: the two units never overlap")
    with database.write() as connection:
        connection.execute(
            insert(pull_requests).values(
                repository=REPO, number=34, head_ref="agent/12-fix", head_sha="f" * 40,
                url="https://github.com/acme/web/pull/34", open=True, merged=False, linked=[12],
                updated_at=1.0,
            )
        )  # fmt: skip
        note_queue_head(connection, REPO, 34, KEPT)

    noted = threading.Event()

    def second_worker() -> None:
        noted.wait()
        with database.write() as connection:
            note_queue_head(connection, REPO, 34, LATER)

    worker = threading.Thread(target=second_worker)
    worker.start()
    with database.write() as connection:
        note_queue_head(connection, REPO, 34, EARLIER)
        noted.set()
        time.sleep(0.5)  # the second worker has read the list and waits on this row's lock
    worker.join(10)
    with database.read() as connection:
        heads = connection.execute(select(pull_requests.c.queue_heads)).scalar()
    assert set(heads) == {KEPT, EARLIER, LATER}, heads
