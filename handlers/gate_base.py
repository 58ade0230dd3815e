"""Where a deployment's range starts (`handlers.gate`): the environment's newest successful
deployment of a commit the gate itself approved there.

GitHub's protection rules guard workflow jobs, not the deployments REST API: anyone with push
access can create a deployment of any commit in a gated environment and post a `success` status
on it. Such a success must not start the range (the next request for that commit would find an
empty range and be approved with whatever it brings). So once the gate has approved a
deployment in the environment (`gate_approvals`, by GitHub's repository id, never its name),
only the success of a commit it approved there counts; any other success is passed over, and
with none left, the deployment is judged without a base (each merged ticket it contains).

Before the gate's first approval in the environment there is nothing to trust: the newest
success counts, whoever posted it, so a repository with a long history gets a starting point.
A forged success then still counts; the first approval ends that for deployments created after
it (GitHub numbers deployments as it creates them). A success of a deployment created before it
still counts, as it did then: otherwise a first approved deployment that failed (or has not
finished) left no base at all, every merged ticket the commit contains was judged, and one that
was deployed long before the gate, never accepted, rejected every request from then on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from handlers.errors import Missing
from handlers.payloads import dig_int, dig_str
from handlers.ports import Services
from policies.rails import DeploymentObserved

RECENT_DEPLOYMENTS = 30
"""How many of the environment's newest deployments are asked of GitHub for its last success."""


async def repository_id_of(services: Services, repository: str, given: int | None) -> int | None:
    """GitHub's id of the repository: `given` (the payload's), else the one its records are
    kept under (the guard placed it, `handlers.repositories.identified`); None when unknown."""
    if given is not None:
        return given
    async with services.store.read() as reads:
        return await reads.repository_named(repository)


@dataclass(frozen=True)
class Trusted:
    """Which successes may start a range: of a commit the gate approved in the environment, or
    of a deployment created before its first approval there; any while it approved nothing."""

    approved: set[str] | None  # lowercase shas; None: nothing approved there yet
    first: int | None = None  # the lowest deployment id it approved there

    def counts(self, deployment_id: int, sha: str) -> bool:
        """Whether a success of deployment `deployment_id` of `sha` may start a range."""
        if self.approved is None or sha.lower() in self.approved:
            return True
        return self.first is not None and deployment_id < self.first


async def trusted(
    services: Services, repository_id: int | None, environment: str, shas: Sequence[str]
) -> Trusted:
    """Of `shas`, those the gate approved in the environment, and where its approvals began."""
    if repository_id is None:
        return Trusted(None)  # no id, no approval could be kept for it either
    async with services.store.read() as reads:
        approved = await reads.gate_approved(repository_id, environment, shas)
        if approved is None:
            return Trusted(None)
        return Trusted(approved, await reads.gate_first_deployment(repository_id, environment))


async def last_success(
    services: Services,
    installation_id: int,
    repository: str,
    environment: str,
    skip: int | None,
    repository_id: int | None,
) -> str | None:
    """The sha of the environment's newest deployment that succeeded and may start a range
    (`trusted`): from the record, else from GitHub's newest deployments (their newest status)."""
    async with services.store.read() as reads:
        held = await reads.held_for(repository, f"deployment:{environment}")
    succeeded = sorted(
        (
            seen
            for seen in held
            if isinstance(seen, DeploymentObserved)
            and seen.status == "success"
            and seen.deployment_id != skip
        ),
        key=lambda seen: seen.deployment_id,
        reverse=True,
    )
    approved = await trusted(services, repository_id, environment, [seen.sha for seen in succeeded])
    for seen in succeeded:
        if approved.counts(seen.deployment_id, seen.sha):
            return seen.sha
    listed: list[tuple[int, str]] = []
    for item in await services.github.deployments(
        installation_id, repository, environment, RECENT_DEPLOYMENTS
    ):
        deployment_id, sha = dig_int(item, "id"), dig_str(item, "sha")
        if deployment_id is not None and sha is not None and deployment_id != skip:
            listed.append((deployment_id, sha))
    if approved.approved is not None:  # the gate approved something here: only what it trusts starts a range
        approved = await trusted(services, repository_id, environment, [sha for _, sha in listed])
    for deployment_id, sha in listed:
        if not approved.counts(deployment_id, sha):
            continue
        try:
            newest = await services.github.latest_status(installation_id, repository, deployment_id)
        except Missing:
            continue
        if dig_str(newest or {}, "state") == "success":
            return sha
    return None
