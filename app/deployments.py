"""Merged tickets, and whether a deployed commit contains a ticket's merge commit.

"Contains" is answered by the compare API (`merge_commit...deployed_sha` is `ahead` or
`identical`), cached per pair of shas: the answer for two commits never changes.
"""

from __future__ import annotations

from collections import OrderedDict

from sqlalchemy import select

from app.codec import ticket_from_data
from app.database import Database
from app.github import GitHubClient, GitHubError
from app.service import tickets
from policies.model import TicketKey


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
