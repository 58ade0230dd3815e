"""What the store keeps of the deployment gate's approvals (`handlers.gate_base`): part of
`handlers.ports.Reads` and `UnitOfWork`, kept here so those stay short."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class GateApproval:
    """The gate approved deploying `sha` to `environment` of GitHub's repository `repository_id`
    for one protection-rule request of workflow run `run_id`."""

    repository_id: int
    environment: str  # GitHub's names ignore case: kept casefolded
    sha: str  # lowercase
    run_id: int
    request: str  # the request among the run's (`ProtectionRequest.request`)
    deployment_id: int | None
    approved_at: float  # epoch seconds


class GateReads(Protocol):
    """Which deployed commits the gate itself approved, and how far its repository's merges are
    from being recorded."""

    async def gate_backlog(self, repository: str, answer: str, rid: int | None) -> tuple[bool, int | None]:
        """Whether gate request `answer` was answered; the fewest runs of a pending close of the
        repository (by GitHub's id `rid` when known, whatever its name was then; None: none)."""

    async def gate_approved(
        self, repository_id: int, environment: str, shas: Collection[str]
    ) -> set[str] | None:
        """Of `shas`, those the gate approved for the environment (casefolded) of the repository;
        None when it has approved nothing there yet."""

    async def gate_first_deployment(self, repository_id: int, environment: str) -> int | None:
        """The lowest deployment id the gate approved for the environment (casefolded) of the
        repository: deployments below it were created before its first approval there (None:
        none known)."""


class GateWrites(Protocol):
    """Recording the gate's approvals, with the answer that tells GitHub."""

    async def record_gate_approval(self, approval: GateApproval) -> None:
        """Keep the approval with this transaction (once per request)."""
