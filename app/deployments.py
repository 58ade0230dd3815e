"""Deployments railyard has seen, merged tickets, and whether one contains the other.

"Contains" is answered by the compare API (`merge_commit...deployed_sha` is `ahead` or
`identical`), cached per pair of shas: the answer for two commits never changes.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.dialects import postgresql, sqlite

from app.codec import ticket_from_data
from app.database import Database
from app.github import GitHubClient, GitHubError
from app.service import tickets
from app.tables import DeploymentRow, table
from policies.model import TicketKey

deployments = table(DeploymentRow)


@dataclass(frozen=True)
class Deployment:
    """One deployment and its newest status (status_id 0: none yet)."""

    repository: str
    deployment_id: int
    environment: str
    sha: str
    status: str | None = None
    status_id: int = 0


def remember(database: Database, deployment: Deployment) -> Deployment:
    """Store a deployment (a newer status replaces an older one); return what is stored now."""
    repository = deployment.repository.casefold()
    with database.write() as connection:
        insert = sqlite.insert if connection.dialect.name == "sqlite" else postgresql.insert
        statement = insert(deployments).values(
            repository=repository,
            deployment_id=deployment.deployment_id,
            environment=deployment.environment,
            sha=deployment.sha,
            status=deployment.status,
            status_id=deployment.status_id,
        )
        newer = statement.excluded.status_id > deployments.c.status_id
        connection.execute(
            statement.on_conflict_do_update(
                index_elements=["repository", "deployment_id"],
                set_={"status": statement.excluded.status, "status_id": statement.excluded.status_id},
                where=newer,
            )
        )
        row = connection.execute(
            select(deployments).where(
                deployments.c.repository == repository,
                deployments.c.deployment_id == deployment.deployment_id,
            )
        ).one()
    return Deployment(
        deployment.repository, row.deployment_id, row.environment, row.sha, row.status, row.status_id
    )


def latest_per_environment(database: Database, repository: str) -> list[Deployment]:
    """The newest deployment (by id) of each environment."""
    newest = (
        select(deployments.c.environment, func.max(deployments.c.deployment_id).label("newest"))
        .where(deployments.c.repository == repository.casefold())
        .group_by(deployments.c.environment)
        .subquery()
    )
    with database.read() as connection:
        rows = connection.execute(
            select(deployments)
            .join(
                newest,
                (deployments.c.environment == newest.c.environment)
                & (deployments.c.deployment_id == newest.c.newest),
            )
            .where(deployments.c.repository == repository.casefold())
        )
        return [
            Deployment(repository, r.deployment_id, r.environment, r.sha, r.status, r.status_id) for r in rows
        ]


def merged_tickets(database: Database, repository: str) -> list[tuple[int, str]]:
    """(ticket number, merge commit) of every merged ticket in the repository."""
    with database.read() as connection:
        rows = connection.execute(
            select(tickets.c.number, tickets.c.revision, tickets.c.snapshot).where(
                tickets.c.repository == repository.casefold(), tickets.c.integration == "merged"
            )
        )
        found = []
        for row in rows:
            merge = ticket_from_data(
                TicketKey(repository, row.number), row.revision, row.snapshot
            ).rails.merge_commit
            if merge:
                found.append((int(row.number), merge))
        return found


class Ancestry:
    """Whether a deployed commit contains a merge commit, through the compare API, cached."""

    def __init__(self, github: GitHubClient, size: int = 4096) -> None:
        self._github = github
        self._cache: OrderedDict[tuple[str, str, str], bool] = OrderedDict()
        self._size = size

    async def contains(self, installation_id: int, repository: str, merge_commit: str, deployed: str) -> bool:
        """True when `deployed` is `merge_commit` or a descendant of it."""
        key = (repository.casefold(), merge_commit, deployed)
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        try:
            answer = await self._github.call(
                "compare", installation_id, repository=repository, base=merge_commit, head=deployed
            )
            contains = isinstance(answer, dict) and answer.get("status") in ("ahead", "identical")
        except GitHubError as error:
            if error.status != 404:
                raise
            contains = False  # one of the commits is gone: nothing deployed contains the merge
        self._cache[key] = contains
        if len(self._cache) > self._size:
            self._cache.popitem(last=False)
        return contains
