"""What the deployment gate reads (its backlog, its answers) and writes (its answers) as
`app.store.unit.SqlReads` and `SqlUnit` offer them (`handlers.gate_ports`), kept here so that
module stays short."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, Protocol, TypeVar

from app.store import gate_approvals
from app.store.gate_reads import gate_backlog
from handlers.gate_ports import GateAnswer

T = TypeVar("T")


class _Statements(Protocol):
    """The part of a unit's session these need (`app.store.unit._Session`)."""

    def post(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> None: ...

    async def run(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T: ...


class GateAnswerReads:
    """`handlers.gate_ports.GateReads` (and `Reads.gate_backlog`) over the session's transaction."""

    _session: _Statements

    async def gate_backlog(
        self, repository: str, answer: str, rid: int | None, kept: tuple[int, str, str, str] | None = None
    ) -> tuple[bool, int | None]:
        """Whether the gate request `answer` was answered (by its outbox key, or its kept answer
        `kept`, by GitHub's id); the fewest runs of a pending close (of GitHub's repository `rid`,
        when known, whatever its name was)."""
        return await self._session.run(gate_backlog, repository, answer, rid, kept)

    async def gate_approved(
        self, repository_id: int, environment: str, shas: Collection[str]
    ) -> set[str] | None:
        """Of `shas`, those the gate approved there; None while the bootstrap lasts there."""
        return await self._session.run(gate_approvals.approved, repository_id, environment, list(shas))

    async def gate_bases(self, repository_id: int, environment: str) -> set[str]:
        """The commits the ranges of the gate's answers there started from."""
        return await self._session.run(gate_approvals.bases, repository_id, environment)


class GateAnswerWrites(GateAnswerReads):
    """`handlers.gate_ports.GateWrites` with the unit's transaction."""

    async def record_gate_answer(self, answer: GateAnswer) -> None:
        """Keep the answer, approved or rejected, with this transaction (once per request)."""
        self._session.post(gate_approvals.record, answer)
