"""Where a deployment's range starts (`handlers.gate`): the environment's newest successful
deployment of a commit the gate itself approved there.

GitHub's protection rules guard workflow jobs, not the deployments REST API: anyone with push
access can create a deployment of any commit in a gated environment and post a `success` status
on it. Such a success must not start the range (the next request for that commit would find an
empty range and be approved with whatever it brings). So the gate keeps every request it answers
in the environment, approved or rejected (`gate_approvals`, by GitHub's repository id, never
its name), and once it has answered one there, a success counts only when its commit was
approved there, or its deployment was created before the first request the gate answered there
(the lowest deployment id among them all: GitHub numbers deployments as it creates them). Any
other success is passed over, and with none left, the deployment is judged without a base (each
merged ticket it contains). A first request rejected ends the window as a first approval does:
a success forged after it, for the commit it rejected, starts nothing.

A success of a deployment created before that first request still counts, as it did then,
unless its commit is one the gate rejected there and never approved: a deployment created early
and its `success` posted after the rejection of its commit starts nothing either. Without the
older successes, a first approved deployment that failed (or has not finished) left no base at all,
every merged ticket the commit contains was judged, and one that was deployed long before the
gate, never accepted, rejected every request from then on.

Bootstrap: before the gate has answered any request in the environment there is nothing to
trust: the newest success counts, whoever posted it, so a repository with a long history gets a
starting point. A success forged in that window still counts. (A request naming no deployment
moves no such boundary: with only those answered, only approved commits' successes count.)
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
    of a deployment created before the first request it answered there (approved or rejected);
    any while it answered none there (the bootstrap)."""

    approved: set[str] | None  # lowercase shas; None: no request answered there yet
    first: int | None = None  # the lowest deployment id among the requests it answered there
    rejected: frozenset[str] = frozenset()  # lowercase shas rejected there, never approved there

    def counts(self, deployment_id: int, sha: str) -> bool:
        """Whether a success of deployment `deployment_id` of `sha` may start a range."""
        if self.approved is None or sha.lower() in self.approved:
            return True
        if sha.lower() in self.rejected:  # whenever its deployment was created
            return False
        return self.first is not None and deployment_id < self.first


async def trusted(
    services: Services, repository_id: int | None, environment: str, shas: Sequence[str]
) -> Trusted:
    """Of `shas`, those the gate approved in the environment, and where its answers there began."""
    if repository_id is None:
        return Trusted(None)  # no id, no answer could be kept for it either
    async with services.store.read() as reads:
        approved = await reads.gate_approved(repository_id, environment, shas)
        if approved is None:
            return Trusted(None)
        first = await reads.gate_first_request(repository_id, environment)
        rejected = await reads.gate_rejected(repository_id, environment, shas)
        return Trusted(approved, first, frozenset(rejected))


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
    if approved.approved is not None:  # the gate answered here: only what it trusts starts a range
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
