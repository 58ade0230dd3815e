"""The stand-in's GitHub Projects (v2): organizations' projects with their fields and items, and
the GraphQL queries and mutations railyard sends about them (`app.github.projects`).

A project starts with GitHub's own fields (Title, Assignees, Status, Labels, Repository,
Milestone, ...): a custom field may not take one of their names, so a project cannot have a
single-select `Repository` field, as on github.com. Answers have GitHub's shapes: 200 with
`data`, and `errors` (NOT_FOUND, FORBIDDEN) where a part cannot be resolved, that part null.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from github_standin.common import Json, node_id_of

BUILT_IN = {  # name -> dataType of the fields every project has
    "Title": "TITLE",
    "Assignees": "ASSIGNEES",
    "Status": "SINGLE_SELECT",
    "Labels": "LABELS",
    "Linked pull requests": "LINKED_PULL_REQUESTS",
    "Milestone": "MILESTONE",
    "Repository": "REPOSITORY",
    "Reviewers": "REVIEWERS",
    "Parent issue": "PARENT_ISSUE",
    "Sub-issues progress": "SUB_ISSUES_PROGRESS",
}
_STATUS_OPTIONS = ("Todo", "In Progress", "Done")


@dataclass
class ProjectField:
    id: str
    name: str
    data_type: str
    options: list[tuple[str, str]] = field(default_factory=list)  # (option id, name), single select only

    def render(self) -> Json:
        """As `fields { nodes { __typename ... on ProjectV2FieldCommon {id name} ... } }` answers it."""
        if self.data_type != "SINGLE_SELECT":
            return {"__typename": "ProjectV2Field", "id": self.id, "name": self.name}
        options = [{"id": oid, "name": name} for oid, name in self.options]
        return {
            "__typename": "ProjectV2SingleSelectField",
            "id": self.id,
            "name": self.name,
            "options": options,
        }


@dataclass
class ProjectItem:
    id: str
    repo: str
    number: int
    values: dict[str, str] = field(default_factory=dict)  # field id -> option id


@dataclass
class Project:
    id: str
    owner: str
    number: int
    title: str
    fields: list[ProjectField] = field(default_factory=list)
    items: dict[str, ProjectItem] = field(default_factory=dict)

    def field_named(self, name: str) -> ProjectField:
        return next(f for f in self.fields if f.name == name)

    def item_of(self, repo: str, number: int) -> ProjectItem | None:
        return next((i for i in self.items.values() if (i.repo, i.number) == (repo, number)), None)

    def values_of(self, repo: str, number: int) -> dict[str, str]:
        """The issue's item's single-select values by field name and option name ({} if no item)."""
        item = self.item_of(repo, number)
        if item is None:
            return {}
        names = {f.id: (f.name, dict(f.options)) for f in self.fields}
        return {names[fid][0]: names[fid][1][oid] for fid, oid in item.values.items()}


@dataclass
class Projects:
    """Every organization's projects, by (login folded, number)."""

    boards: dict[tuple[str, int], Project] = field(default_factory=dict)
    _ids: Any = field(default_factory=lambda: itertools.count(1), repr=False)

    def _id(self, kind: str) -> str:
        return node_id_of(kind, next(self._ids))

    def add_project(
        self, owner: str, number: int, fields: Mapping[str, Sequence[str] | None], title: str = "Board"
    ) -> Project:
        """A project with GitHub's own fields and `fields` (options: a single-select field; None:
        a text field). A name GitHub's own fields hold is refused, as GitHub refuses it."""
        project = Project(self._id("PVT_"), owner, number, title)
        for name, built_in in BUILT_IN.items():
            project.fields.append(self._field(name, built_in, _STATUS_OPTIONS if name == "Status" else ()))
        for name, options in fields.items():
            if any(f.name.casefold() == name.casefold() for f in project.fields):
                raise ValueError(f"Name has already been taken: {name}")
            project.fields.append(
                self._field(name, "TEXT" if options is None else "SINGLE_SELECT", options or [])
            )
        self.boards[(owner.casefold(), number)] = project
        return project

    def _field(self, name: str, data_type: str, options: Sequence[str]) -> ProjectField:
        kind = "PVTSSF_" if data_type == "SINGLE_SELECT" else "PVTF_"
        return ProjectField(self._id(kind), name, data_type, [(self._option_id(), o) for o in options])

    def _option_id(self) -> str:
        return f"{next(self._ids):08x}"  # GitHub's option ids are 8 hex digits

    def add_option(self, project: Project, field_name: str, option: str) -> None:
        """Someone adds an option to a single-select field."""
        project.field_named(field_name).options.append((self._option_id(), option))

    def add_item(self, project: Project, repo: str, number: int) -> ProjectItem:
        """The issue's item (added now, or the one it already has)."""
        item = project.item_of(repo, number)
        if item is None:
            item = ProjectItem(self._id("PVTI_"), repo, number)
            project.items[item.id] = item
        return item

    def move(self, project: Project, repo: str, number: int, field_name: str, option: str) -> None:
        """A person sets a field of the issue's card (no webhook reaches railyard for it here)."""
        chosen = project.field_named(field_name)
        item = project.item_of(repo, number)
        assert item is not None, "the issue has no item in the project"
        item.values[chosen.id] = next(oid for oid, name in chosen.options if name == option)

    def by_id(self, project_id: object) -> Project | None:
        return next((p for p in self.boards.values() if p.id == project_id), None)
