"""Whether a deployed commit contains a ticket's merge commit.

"Contains" is answered by the compare API (`merge_commit...deployed_sha` is `ahead` or
`identical`), cached per pair of shas: the answer for two commits never changes.

Cost: a deployment status is checked against every merged ticket (one deployment moves every
ticket it contains, and a rollback can take any deployed ticket back), but not with one compare
each. Containment is transitive: when a ticket's merge is known to be in an earlier deployed
commit (its anchor) and the new commit contains the anchor, the new commit contains the merge.
Tickets deployed together share one anchor, so a deployment that moves forward costs one compare
per anchor plus one per ticket not known to be deployed anywhere (recent merges). Only a
deployment that does not contain an anchor (a rollback) compares each ticket of that anchor.
The answers are the ones one compare per ticket would give, so the recorded observations and
the rails are the same, whatever the order.
"""

from __future__ import annotations

from collections import OrderedDict

from app.github.client import GitHubClient, GitHubError
from handlers.ports import MergedTicket


class Ancestry:
    """Whether a deployed commit contains a merge commit, through the compare API, cached."""

    def __init__(self, github: GitHubClient, size: int = 4096) -> None:
        self._github = github
        self._cache: OrderedDict[tuple[str, str, str], bool] = OrderedDict()
        self._size = size

    async def contains(self, installation_id: int, repository: str, merge_commit: str, deployed: str) -> bool:
        """True when `deployed` is `merge_commit` or a descendant of it."""
        if merge_commit == deployed:
            return True  # a commit contains itself: compare would answer `identical`
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

    async def contains_ticket(
        self, installation_id: int, repository: str, ticket: MergedTicket, deployed: str
    ) -> bool:
        """Whether `deployed` contains one of the ticket's merges: through its anchor when
        `deployed` contains that (one shared compare), else by comparing each merge itself (a
        ticket whose PRs merged in another order than their numbers is brought by whichever
        merge the deployment has)."""
        if ticket.anchor is not None and await self.contains(
            installation_id, repository, ticket.anchor, deployed
        ):
            return True
        for merge in ticket.merge_commits or (ticket.merge_commit,):
            if await self.contains(installation_id, repository, merge, deployed):
                return True
        return False
