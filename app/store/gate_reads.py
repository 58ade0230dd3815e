"""What the deployment gate reads of the store before it judges (`handlers.gate`): whether its
answer is recorded already, and how far the repository's merges are from being recorded."""

from __future__ import annotations

from sqlalchemy import Connection, String, and_, case, cast, func, or_, select

from app.contracts.effect_types import review_dedupe_key
from app.store.delivery_status import FAILED, PENDING
from app.store.effects import effects_table
from app.store.queue import deliveries
from app.store.tables import PullRequestRow, table

pulls_table = table(PullRequestRow)


def gate_backlog(connection: Connection, repository: str, answer: str) -> tuple[bool, int | None]:
    """Whether the answer to the protection-rule request `answer` is in the outbox already, and
    the fewest runs of the repository's pending `pull_request.closed` deliveries (`merge_runs`)."""
    sent = connection.execute(
        select(effects_table.c.id).where(effects_table.c.dedupe_key == review_dedupe_key(answer)).limit(1)
    ).first()
    return sent is not None, merge_runs(connection, repository)


def merge_runs(connection: Connection, repository: str) -> int | None:
    """How far the repository's unsettled `pull_request.closed` deliveries are from being
    processed, as the fewest runs among them (None: none unsettled). A pending close counts the
    runs of its pull request's oldest pending delivery (its own, or one it waits behind that keeps
    failing); a close that gave up (`failed`) while railyard records its pull request as still
    open counts every run it had. The gate waits on a few runs and stops waiting past them."""
    close, other = deliveries.alias("close"), deliveries.alias("other")
    behind = (
        select(func.max(other.c.attempts))
        .where(other.c.status == PENDING, other.c.ordering_key == close.c.ordering_key)
        .scalar_subquery()
    )
    recorded_closed = (
        select(pulls_table.c.id)
        .where(
            pulls_table.c.repository == close.c.repository,
            close.c.ordering_key == pulls_table.c.repository + "!" + cast(pulls_table.c.number, String),
            pulls_table.c.open.is_(False),
        )
        .exists()
    )
    runs = case((close.c.status == PENDING, func.coalesce(behind, close.c.attempts)), else_=close.c.attempts)
    statement = select(func.min(runs)).where(
        close.c.repository == repository.casefold(),
        close.c.event == "pull_request",
        close.c.action == "closed",
        or_(close.c.status == PENDING, and_(close.c.status == FAILED, ~recorded_closed)),
    )
    found = connection.execute(statement).scalar()
    return None if found is None else int(found)
