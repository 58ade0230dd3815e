"""The outbox's writer of `EffectKind.PROJECT_FIELDS`: keep the Work, Repository and Deployment
single-select fields of a ticket's issue item in each configured GitHub Project equal to the
rails (SPEC: "Organization defaults and GitHub's own views").

The effect coalesces like the status comment: the renderer (`Surfaces.project_fields`) says
what each field should show when it is performed, so a burst of changes is one sync per
ticket. Each sync reads the project's fields and the item's values and sets only the fields
that differ, so a card a person moved is set back at the ticket's next change (railyard never
reads a card's move as a rail change). What a project lacks (the project, a field, an option,
the permission) is kept with the effect's result and shown once on the status comment, which
is written again only when that changes: the effect is done, never retried for it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from app.contracts.effect_types import status_comment
from app.github.client import NotFound, PermissionDenied
from app.github.projects import IssueItems
from app.store.database import Database
from app.store.effects import enqueue
from policies.projects import Board, Problem, ProblemCode, ProjectRail, Wanted, plan_item


class ProjectBoards(Protocol):
    """GitHub Projects as the sync needs them (`app.github.projects.ProjectsAdapter`)."""

    async def board(self, installation_id: int, owner: str, number: int) -> Board:
        """The organization's project and its fields; `NotFound` when there is none."""
        ...

    async def issue_items(self, installation_id: int, repository: str, number: int) -> IssueItems:
        """The issue's node id and its items by project id; `NotFound` when there is no issue."""
        ...

    async def add_item(self, installation_id: int, project_id: str, content_id: str) -> str:
        """Add the issue to the project; the item's id."""
        ...

    async def set_option(
        self, installation_id: int, project_id: str, item_id: str, field_id: str, option_id: str
    ) -> None:
        """Set one single-select field of the item."""
        ...


def project_name(owner: str, number: int) -> str:
    """How a project is named in the effect's result and on the status comment: `acme/5`."""
    return f"{owner.casefold()}/{number}"


def problems_in(result: Mapping[str, Any] | None) -> dict[str, tuple[Problem, ...]]:
    """What each project lacked at the last sync, from the effect's stored result (only the
    projects that lacked something)."""
    kept = (result or {}).get("projects") or {}
    return {
        name: tuple(Problem.from_data(p) for p in entry["problems"])
        for name, entry in kept.items()
        if isinstance(entry, dict) and entry.get("problems")
    }


def _wanted(project: Mapping[str, Any]) -> list[Wanted]:
    return [Wanted(ProjectRail(w["rail"]), str(w["field"]), str(w["option"])) for w in project["wanted"]]


ShowAgain = Callable[[int, str, int], Awaitable[None]]
"""Write the ticket's status comment again (installation, repository, number)."""


def status_comment_again(database: Database, clock: Callable[[], float] = time.time) -> ShowAgain:
    """Enqueue the ticket's status comment (coalesced with one pending) in `database`."""

    def enqueue_it(installation: int, repository: str, number: int) -> None:
        with database.write() as connection:
            enqueue(connection, [status_comment(installation, repository, number)], clock())

    async def show_again(installation: int, repository: str, number: int) -> None:
        await asyncio.to_thread(enqueue_it, installation, repository, number)

    return show_again


@dataclass
class ProjectSync:
    """Performs a ticket's project-fields effect; `write(row, payload)` is the outbox's writer.
    `show_again` is told when what the projects lack changed (the status comment says it)."""

    boards: ProjectBoards
    show_again: ShowAgain

    async def write(self, row: Mapping[str, Any], payload: Mapping[str, Any]) -> dict[str, Any]:
        """Sync every project the payload names; the result kept with the effect."""
        installation, repository = int(row["installation_id"]), str(row["repository"])
        number = int(payload["number"])
        before: dict[str, Any] = dict((row["result"] or {}).get("projects") or {})
        issue: IssueItems | None = None
        try:
            issue = await self.boards.issue_items(installation, repository, number)
        except NotFound:
            return dict(row["result"] or {})  # the issue is gone (deleted, moved): nothing to show
        except PermissionDenied:
            pass  # the app may not read projects at all: every project says so
        kept: dict[str, Any] = {}
        for project in payload["projects"]:
            name = project_name(project["owner"], int(project["number"]))
            earlier = before.get(name) or {}
            if issue is None:
                kept[name] = _lacking(ProblemCode.NO_ACCESS, bool(earlier.get("added")))
            else:
                kept[name] = await self._sync(installation, issue, project, earlier)
        result = {"projects": kept}
        if problems_in(result) != problems_in({"projects": before}):
            await self.show_again(installation, repository, number)
        return result

    async def _sync(
        self, installation: int, issue: IssueItems, project: Mapping[str, Any], before: Mapping[str, Any]
    ) -> dict[str, Any]:
        """One project: find (or add) the issue's item, then set the fields that differ."""
        added = bool(before.get("added"))
        try:
            board = await self.boards.board(installation, str(project["owner"]), int(project["number"]))
        except NotFound:
            return _lacking(ProblemCode.NO_PROJECT, added)
        except PermissionDenied:
            return _lacking(ProblemCode.NO_ACCESS, added)
        found = issue.items.get(board.id)
        if found is None and not (project.get("add_items") and not added):
            return {"item": None, "added": added, "problems": []}  # not on this board
        try:
            if found is None:  # added once: an item a person removes afterwards stays removed
                found = (await self.boards.add_item(installation, board.id, issue.issue_id), {})
                added = True
            item_id, current = found
            plan = plan_item(board, _wanted(project), current)
            for update in plan.updates:
                await self.boards.set_option(
                    installation, board.id, item_id, update.field_id, update.option_id
                )
        except PermissionDenied:  # read, but not write
            return _lacking(ProblemCode.NO_ACCESS, added)
        return {"item": item_id, "added": added, "problems": [p.to_data() for p in plan.problems]}


def _lacking(code: ProblemCode, added: bool) -> dict[str, Any]:
    return {"item": None, "added": added, "problems": [Problem(code).to_data()]}


def wanted_payload(
    rails: Mapping[ProjectRail, str], names: Mapping[ProjectRail, str]
) -> Sequence[dict[str, str]]:
    """What a project's fields should show, as the effect's rendered payload carries it."""
    return [{"rail": rail.value, "field": names[rail], "option": rails[rail]} for rail in ProjectRail]
