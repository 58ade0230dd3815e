"""An in-memory GitHub Projects, behind the port `app.runtime.project_sync.ProjectBoards`."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.github.client import NotFound, PermissionDenied
from app.github.projects import IssueItems
from policies.projects import Board, BoardField

ISSUE_ID = "I_12"


@dataclass
class FakeBoards:
    """One project (`acme/5`, or none) with fields; the issue's item and its values; every write."""

    project: Board | None = None
    item: tuple[str, dict[str, str]] | None = None  # (item id, field id -> option id)
    access: str = "write"  # the app's organization projects permission: none, read, write
    writes: list[tuple[str, ...]] = field(default_factory=list)

    def _need(self, level: str) -> None:
        if ("none", "read", "write").index(self.access) < ("none", "read", "write").index(level):
            raise PermissionDenied(403, "graphql: Resource not accessible by integration")

    async def board(self, installation_id: int, owner: str, number: int) -> Board:
        self._need("read")
        if self.project is None or (owner, number) != ("acme", 5):
            raise NotFound(404, f"Could not resolve to a ProjectV2 with the number {number}.")
        return self.project

    async def issue_items(self, installation_id: int, repository: str, number: int) -> IssueItems:
        self._need("read")
        if self.project is None or self.item is None:
            return IssueItems(ISSUE_ID, {})
        return IssueItems(ISSUE_ID, {self.project.id: (self.item[0], dict(self.item[1]))})

    async def add_item(self, installation_id: int, project_id: str, content_id: str) -> str:
        self._need("write")
        self.writes.append(("add", project_id, content_id))
        self.item = self.item or ("PVTI_1", {})
        return self.item[0]

    async def set_option(
        self, installation_id: int, project_id: str, item_id: str, field_id: str, option_id: str
    ) -> None:
        self._need("write")
        assert self.item is not None and item_id == self.item[0]
        self.writes.append(("set", field_id, option_id))
        self.item[1][field_id] = option_id

    def shows(self) -> dict[str, str]:
        """The item's values by field name and option name."""
        assert self.project is not None and self.item is not None
        fields: dict[str, BoardField] = {f.id: f for f in self.project.fields}
        return {fields[f].name: dict(fields[f].options)[o] for f, o in self.item[1].items()}
