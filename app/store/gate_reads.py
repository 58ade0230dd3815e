"""What the deployment gate reads of the store before it judges (`handlers.gate`): whether its
answer is recorded already, and how far the repository's merges are from being recorded."""

from __future__ import annotations

from sqlalchemy import Connection, and_, or_, select, text

from app.contracts.effect_types import review_dedupe_key
from app.store.delivery_status import PENDING
from app.store.effects import effects_table
from app.store.gate_approvals import gate_approvals
from app.store.queue import deliveries


def gate_backlog(
    connection: Connection,
    repository: str,
    answer: str,
    repository_id: int | None = None,
    kept: tuple[int, str, str, str] | None = None,
) -> tuple[bool, int | None]:
    """Whether the answer to the protection-rule request `answer` is in the outbox already, or
    kept in `gate_approvals` as `kept` (repository id, environment casefolded, sha, request: a
    rename since changes none of them, where it changes the outbox key's name), and the fewest
    runs of the repository's pending `pull_request.closed` deliveries (`merge_runs`)."""
    sent = connection.execute(
        select(effects_table.c.id).where(effects_table.c.dedupe_key == review_dedupe_key(answer)).limit(1)
    ).first()
    if sent is None and kept is not None:
        repository_id_kept, environment, sha, request = kept
        columns = gate_approvals.c
        answered = select(columns.run_id).where(
            columns.repository_id == repository_id_kept,
            columns.environment == environment,
            columns.sha == sha,
            columns.request == request,
        )
        sent = connection.execute(answered).first()
    return sent is not None, merge_runs(connection, repository, repository_id)


def merge_runs(connection: Connection, repository: str, repository_id: int | None = None) -> int | None:
    """How far the repository's pending `pull_request.closed` deliveries are from being processed:
    the fewest runs among them (None: none pending). Each counts the runs of the first pending
    delivery of its pull request, the one the worker takes next: its own, or those of an earlier
    delivery it waits behind (that one failing again and again holds it too). The gate waits on
    a few runs and stops waiting past them (`handlers.gate`).

    With `repository_id`, the repository's closes are those stored with its id, whatever name
    it had then (a rename since does not hide one), and those stored before ids were (0026) under
    its name now; without, by its name alone."""
    by_name = deliveries.c.repository == repository.casefold()
    kept_id = deliveries.c.repository_id
    ours = by_name
    if repository_id is not None:
        ours = or_(kept_id == repository_id, and_(kept_id.is_(None), by_name))
    closes = connection.execute(
        select(deliveries.c.ordering_key, deliveries.c.attempts)
        .where(
            deliveries.c.status == PENDING,
            ours,
            deliveries.c.event == "pull_request",
            deliveries.c.action == "closed",
        )
        .limit(MAX_CLOSES)
    ).all()
    fewest: int | None = None
    for key, attempts in closes:
        runs = int(attempts) if key is None else _first_pending_runs(connection, key)
        fewest = runs if fewest is None else min(fewest, runs)
    return fewest


MAX_CLOSES = 50
"""Pending closes of one repository looked at, at most (a gate request waits while any of them
has few runs: past fifty, the first fifty say as much)."""

_FIRST_PENDING = (
    "SELECT attempts FROM webhook_deliveries{index} WHERE status = 'pending' AND ordering_key = :key "
    "ORDER BY seq LIMIT 1"
)
"""The runs of a pull request's first pending delivery: the partial index of pending rows by
ordering key answers it ('pending' written out, not bound, so that it may; SQLite is told to use
it, its planner otherwise walks every pending row by status)."""
_FIRST_PENDING_BY = {
    "sqlite": text(_FIRST_PENDING.format(index=" INDEXED BY ix_webhook_deliveries_pending")),
    "postgresql": text(_FIRST_PENDING.format(index="")),
}


def _first_pending_runs(connection: Connection, key: str) -> int:
    found = connection.execute(_FIRST_PENDING_BY[connection.dialect.name], {"key": key}).scalar()
    return 0 if found is None else int(found)
