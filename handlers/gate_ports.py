"""What the store keeps of the deployment gate's answers (`handlers.gate_base`): part of
`handlers.ports.Reads` and `UnitOfWork`, kept here so those stay short."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class GateAnswer:
    """The gate answered one protection-rule request of workflow run `run_id` to deploy `sha` to
    `environment` of GitHub's repository `repository_id`: approved, or rejected (judged or not)."""

    repository_id: int
    environment: str  # GitHub's names ignore case: kept casefolded
    sha: str  # lowercase
    run_id: int
    request: str  # the request among the run's (`ProtectionRequest.request`)
    deployment_id: int | None
    approved: bool
    answered_at: float  # epoch seconds
    base: str | None = None  # the commit its range started from (lowercase); None: no base


class GateReads(Protocol):
    """Which deployed commits the gate itself approved, where its answers began, and how far its
    repository's merges are from being recorded."""

    async def gate_backlog(
        self, repository: str, answer: str, rid: int | None, kept: tuple[int, str, str, str] | None = None
    ) -> tuple[bool, int | None]:
        """Whether gate request `answer` was answered (its answer in the outbox under that key, or
        kept as `kept`: repository id, environment casefolded, sha, request, whatever the name was
        then); the fewest runs of a pending close of the repository (by GitHub's id `rid` when
        known, whatever its name was then; None: none)."""

    async def gate_approved(
        self, repository_id: int, environment: str, shas: Collection[str]
    ) -> set[str] | None:
        """Of `shas`, those the gate approved for the environment (casefolded) of the repository;
        None while the bootstrap lasts there: no answer kept that was an approval or started its
        range from a commit."""

    async def gate_bases(self, repository_id: int, environment: str) -> set[str]:
        """The commits the ranges of the gate's answers for the environment (casefolded) of the
        repository started from, approved or rejected (lowercase)."""


class GateWrites(Protocol):
    """Recording the gate's answers, with the answer that tells GitHub."""

    async def record_gate_answer(self, answer: GateAnswer) -> None:
        """Keep the answer with this transaction (once per request)."""
