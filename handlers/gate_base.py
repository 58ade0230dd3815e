"""Where a deployment's range starts (`handlers.gate`): the environment's newest successful
deployment of a commit the gate itself approved there, or started one of its ranges from.

GitHub's protection rules guard workflow jobs, not the deployments REST API: anyone with push
access can create a deployment of any commit in a gated environment and post a `success` status
on it, at any time. Such a success must not start the range (the next request for that commit,
or a later one, would find a range short of the unaccepted tickets and be approved with them).
So the gate keeps every request it answers in the environment, approved or rejected, with the
commit its range started from (`gate_approvals`, by GitHub's repository id, never its name),
and once the bootstrap is over there (below), a success counts only when its commit is one it
approved there or one a range of its started from. Any other success is passed over, whoever
posted it and whenever, and with none left, the deployment is judged without a base (each
merged ticket it contains).

Starting again where an earlier range started is as safe as that range was: a range from it
holds everything since. That keeps the environment's history usable: a first request rejected,
or a first approved deployment that failed (or has not finished), leaves the success its range
started from as a base, not no base at all (which judged every merged ticket the commit
contains, and one deployed long before the gate and never accepted would reject every request
from then on).

Bootstrap: until the gate has approved a deployment in the environment or judged one from a
base there, there is nothing to trust: the newest success counts, whoever posted it, so a
repository with a long history gets a starting point. A success forged in that window still
counts, and the first such answer's range starts from it, so it stays a base. A request
rejected unjudged keeps, as its base, the success its range would have started from
(`handlers.gate`), so it ends the window too. An answer that trusted nothing (no success known
at all, or GitHub could not say) does not: it would leave no success that counts, and every
later request judged from no base, held back for good by any old merged ticket never accepted
(found by review).
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
    started one of its ranges from; any while the bootstrap lasts there."""

    approved: set[str] | None  # lowercase shas; None: the bootstrap lasts there
    bases: frozenset[str] = frozenset()  # lowercase: where its ranges there started

    def counts(self, sha: str) -> bool:
        """Whether a success of `sha` may start a range."""
        sha = sha.lower()
        return self.approved is None or sha in self.approved or sha in self.bases


async def trusted(
    services: Services, repository_id: int | None, environment: str, shas: Sequence[str]
) -> Trusted:
    """Of `shas`, those the gate approved in the environment, and where its ranges there started."""
    if repository_id is None:
        return Trusted(None)  # no id, no answer could be kept for it either
    async with services.store.read() as reads:
        approved = await reads.gate_approved(repository_id, environment, shas)
        if approved is None:
            return Trusted(None)
        return Trusted(approved, frozenset(await reads.gate_bases(repository_id, environment)))


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
        if approved.counts(seen.sha):
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
        if not approved.counts(sha):
            continue
        try:
            newest = await services.github.latest_status(installation_id, repository, deployment_id)
        except Missing:
            continue
        if dig_str(newest or {}, "state") == "success":
            return sha
    return None
