"""The deployment gate's answers (`gate_approvals`, `handlers.gate_base`): every protection-rule
request it answered, approved or rejected (`approved` says which; the table kept approvals
only before 0028, hence its name).

A row is written in the transaction that enqueues the answer (`handlers.gate`), so an answer is
never sent without being kept. Rows are never updated or pruned: an approved one is what a later
request's range may start from, and the lowest deployment among all of them is where the gate
began answering in the environment.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import Connection, func, select

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
    )
    connection.execute(statement.on_conflict_do_nothing())


def approved(
    connection: Connection, repository_id: int, environment: str, shas: Collection[str]
) -> set[str] | None:
    """Of `shas`, those approved for the repository's environment; None when no request there
    was ever answered, approved or rejected (each answered by the primary key's prefix)."""
    there = select(gate_approvals.c.sha).where(
        gate_approvals.c.repository_id == repository_id,
        gate_approvals.c.environment == environment.casefold(),
    )
    wanted = {sha.lower() for sha in shas}
    asked = there.where(gate_approvals.c.sha.in_(wanted), gate_approvals.c.approved.is_(True))
    found = set(connection.execute(asked).scalars()) if wanted else set()
    if found or connection.execute(there.limit(1)).first() is not None:
        return {str(sha) for sha in found}
    return None


def rejected(connection: Connection, repository_id: int, environment: str, shas: Collection[str]) -> set[str]:
    """Of `shas`, those rejected for the repository's environment and never approved there."""
    wanted = {sha.lower() for sha in shas}
    if not wanted:
        return set()
    answers = select(gate_approvals.c.sha, gate_approvals.c.approved).where(
        gate_approvals.c.repository_id == repository_id,
        gate_approvals.c.environment == environment.casefold(),
        gate_approvals.c.sha.in_(wanted),
    )
    seen: dict[str, bool] = {}
    for sha, approved_there in connection.execute(answers):
        seen[str(sha)] = seen.get(str(sha), False) or bool(approved_there)
    return {sha for sha, approved_there in seen.items() if not approved_there}


def first_request(connection: Connection, repository_id: int, environment: str) -> int | None:
    """The lowest deployment id among the requests answered for the repository's environment,
    approved or rejected (None: none answered, or none named a deployment). GitHub numbers
    deployments as it creates them: one below it was created before the gate's first answer there."""
    lowest = select(func.min(gate_approvals.c.deployment_id)).where(
        gate_approvals.c.repository_id == repository_id,
        gate_approvals.c.environment == environment.casefold(),
    )
    found = connection.execute(lowest).scalar()
    return None if found is None else int(found)
