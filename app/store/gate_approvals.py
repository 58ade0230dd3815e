"""The deployment gate's answers (`gate_approvals`, `handlers.gate_base`): every protection-rule
request it answered, approved or rejected (`approved` says which; the table kept approvals
only before 0028, hence its name).

A row is written in the transaction that enqueues the answer (`handlers.gate`), so an answer is
never sent without being kept. Rows are never updated or pruned: an approved one's commit, and
any one's `base` (the commit its range started from), are what a later request's range may
start from.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import Connection, select

from app.store.database import insert_for
from app.store.tables import GateApprovalRow, table
from handlers.gate_ports import GateAnswer

gate_approvals = table(GateApprovalRow)


def record(connection: Connection, answer: GateAnswer) -> None:
    """Keep the answer, unless this request's is kept already."""
    statement = insert_for(connection)(gate_approvals).values(
        repository_id=answer.repository_id,
        environment=answer.environment.casefold(),
        sha=answer.sha.lower(),
        request=answer.request,
        run_id=answer.run_id,
        deployment_id=answer.deployment_id,
        approved=answer.approved,
        answered_at=answer.answered_at,
        base=answer.base.lower() if answer.base else None,
    )
    connection.execute(statement.on_conflict_do_nothing())


def approved(
    connection: Connection, repository_id: int, environment: str, shas: Collection[str]
) -> set[str] | None:
    """Of `shas`, those approved for the repository's environment; None while the bootstrap
    lasts there: no answer kept that was an approval or started its range from a commit (an
    answer without either, a rejection unjudged or judged without a base, leaves nothing to
    trust, so it does not end it: `handlers.gate_base`). Each answered by the primary key's prefix."""
    there = select(gate_approvals.c.sha).where(
        gate_approvals.c.repository_id == repository_id,
        gate_approvals.c.environment == environment.casefold(),
    )
    wanted = {sha.lower() for sha in shas}
    asked = there.where(gate_approvals.c.sha.in_(wanted), gate_approvals.c.approved.is_(True))
    found = set(connection.execute(asked).scalars()) if wanted else set()
    trusting = there.where(gate_approvals.c.approved.is_(True) | gate_approvals.c.base.is_not(None))
    if found or connection.execute(trusting.limit(1)).first() is not None:
        return {str(sha) for sha in found}
    return None


def bases(connection: Connection, repository_id: int, environment: str) -> set[str]:
    """The commits the ranges of the answers for the repository's environment started from,
    approved or rejected."""
    started = (
        select(gate_approvals.c.base)
        .distinct()
        .where(
            gate_approvals.c.repository_id == repository_id,
            gate_approvals.c.environment == environment.casefold(),
            gate_approvals.c.base.is_not(None),
        )
    )
    return {str(sha) for sha in connection.execute(started).scalars()}
