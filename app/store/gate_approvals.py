"""The deployment gate's approvals (`gate_approvals`, `handlers.gate_base`).

A row is written in the transaction that enqueues the approving answer (`handlers.gate`), so
an answer is never sent without its approval kept. Rows are never updated or pruned: they are
what a later request's range may start from.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import Connection, func, select

from app.store.database import insert_for
from app.store.tables import GateApprovalRow, table
from handlers.gate_ports import GateApproval

gate_approvals = table(GateApprovalRow)


def record(connection: Connection, approval: GateApproval) -> None:
    """Keep the approval, unless this request's is kept already."""
    statement = insert_for(connection)(gate_approvals).values(
        repository_id=approval.repository_id,
        environment=approval.environment.casefold(),
        sha=approval.sha.lower(),
        request=approval.request,
        run_id=approval.run_id,
        deployment_id=approval.deployment_id,
        approved_at=approval.approved_at,
    )
    connection.execute(statement.on_conflict_do_nothing())


def approved(
    connection: Connection, repository_id: int, environment: str, shas: Collection[str]
) -> set[str] | None:
    """Of `shas`, those approved for the repository's environment; None when none ever was
    (each answered by the primary key's prefix)."""
    there = select(gate_approvals.c.sha).where(
        gate_approvals.c.repository_id == repository_id,
        gate_approvals.c.environment == environment.casefold(),
    )
    wanted = {sha.lower() for sha in shas}
    found = (
        set(connection.execute(there.where(gate_approvals.c.sha.in_(wanted))).scalars()) if wanted else set()
    )
    if found or connection.execute(there.limit(1)).first() is not None:
        return {str(sha) for sha in found}
    return None


def first_deployment(connection: Connection, repository_id: int, environment: str) -> int | None:
    """The lowest deployment id the gate approved for the repository's environment (None: none
    approved, or none of its approved requests named a deployment). GitHub numbers deployments
    as it creates them: one below it was created before the gate's first approval there."""
    lowest = select(func.min(gate_approvals.c.deployment_id)).where(
        gate_approvals.c.repository_id == repository_id,
        gate_approvals.c.environment == environment.casefold(),
    )
    found = connection.execute(lowest).scalar()
    return None if found is None else int(found)
