"""`handlers.ports.Ancestry`: the (merge commit, deployed commit) pairs a test says contain."""

from __future__ import annotations

from dataclasses import dataclass, field

from handlers.ports import MergedTicket


@dataclass
class FakeAncestry:
    """A deployed commit contains a merge when it is the merge, or the pair was given."""

    pairs: set[tuple[str, str]] = field(default_factory=set)
    compared: list[tuple[str, str]] = field(default_factory=list)

    async def contains(self, installation_id: int, repository: str, merge_commit: str, deployed: str) -> bool:
        """Whether `deployed` contains `merge_commit` (a commit contains itself, with no compare)."""
        if merge_commit == deployed:
            return True
        self.compared.append((merge_commit, deployed))
        return (merge_commit, deployed) in self.pairs

    async def contains_ticket(
        self, installation_id: int, repository: str, ticket: MergedTicket, deployed: str
    ) -> bool:
        """Through the anchor when `deployed` contains it, else by each of its merges (as the real one)."""
        if ticket.anchor is not None and await self.contains(
            installation_id, repository, ticket.anchor, deployed
        ):
            return True
        for merge in ticket.merge_commits or (ticket.merge_commit,):
            if await self.contains(installation_id, repository, merge, deployed):
                return True
        return False
