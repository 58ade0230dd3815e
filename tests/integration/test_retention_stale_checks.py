"""Retention drops a performed check-run's row once its head is no open PR's current head
(pushed over, the PR closed) and it is older than the retention; a current head's row stays."""

from __future__ import annotations

from sqlalchemy import insert, select, update

from app.contracts.effect_types import check_run
from app.store.database import Database
from app.store.effects import effects_table, enqueue
from app.store.pulls import pull_requests
from app.store.retention import DAY, apply_retention


def test_check_rows_of_heads_pushed_over_long_ago_are_pruned(database: Database) -> None:
    now = 1_800_000_000.0
    # An outsider's fork PR (#77, linking nothing) pushed 200 times a year ago: 200 heads, each
    # written once, none shown by any PR now.
    effects = [check_run(7, "acme/web", 77, f"{i:040x}") for i in range(200)]
    with database.write() as connection:
        enqueue(connection, effects, now - 365 * DAY)
        connection.execute(update(effects_table).values(status="done", updated_at=now - 365 * DAY))
        # The PR is still open at its last head: that row stays (the next check edits it).
        connection.execute(
            insert(pull_requests).values(
                repository="acme/web", number=77, head_sha=f"{199:040x}", url="https://x", open=True,
                merged=False, linked=[], updated_at=now,
            )
        )  # fmt: skip
    apply_retention(database, now)
    with database.read() as connection:
        left = [row.payload["head_sha"] for row in connection.execute(select(effects_table.c.payload))]
    assert left == [f"{199:040x}"], f"{len(left)} check rows survive retention"


def test_a_check_row_of_an_open_prs_head_stays_when_its_name_and_the_prs_differ_but_the_ids_agree(
    database: Database,
) -> None:
    """PR #5 of repository 55 was first seen while acme/web was being renamed acme/site (a unit
    racing the rename on PostgreSQL): its row stayed under acme/web, and its check's row, enqueued
    for id 55, was moved to acme/site before it was written (`repositories.place_before_write`).
    A year on, the PR is still open at that head: the check's row is its, by the repository's
    id, so it stays (the next check edits it rather than adding a second)."""
    now, head = 1_800_000_000.0, "5" * 40
    with database.write() as connection:
        enqueue(connection, [check_run(7, "acme/site", 5, head)], now - 365 * DAY)
        connection.execute(
            update(effects_table).values(status="done", updated_at=now - 365 * DAY, repository_id=55)
        )
        connection.execute(
            insert(pull_requests).values(
                repository="acme/web", repository_id=55, number=5, head_sha=head, url="https://x",
                open=True, merged=False, linked=[], updated_at=now,
            )
        )  # fmt: skip
    apply_retention(database, now)
    with database.read() as connection:
        assert connection.execute(select(effects_table.c.id)).all() != []
