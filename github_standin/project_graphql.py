"""The stand-in's GraphQL answers about GitHub Projects: an organization's project and its
fields, an issue's project items, `addProjectV2ItemById` and `updateProjectV2ItemFieldValue`
(the queries `app.github.projects` sends; another shape is answered with an error).

The installation reads its own organization's projects only (another's is NOT_FOUND, as a
project it cannot see is on GitHub) and needs `organization_projects`: read to ask, write to
change; without it GitHub answers FORBIDDEN, "Resource not accessible by integration".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from github_standin.common import ACCESS_LEVELS, Json, node_id_of
from github_standin.projects import Project
from github_standin.state import Installation, StandinState

Resolver = Callable[[StandinState, Installation, dict[str, Any]], Json]
_FORBIDDEN = "Resource not accessible by integration"


def _error(kind: str | None, path: list[str], message: str) -> Json:
    error: Json = {"path": path, "locations": [{"line": 3, "column": 5}], "message": message}
    if kind is not None:
        error["type"] = kind
    if kind == "FORBIDDEN":
        error["extensions"] = {"saml_failure": False}
    return error


def _answer(data: Json, *errors: Json) -> Json:
    return {"data": data, "errors": list(errors)} if errors else {"data": data}


def _may(installation: Installation, level: str) -> bool:
    granted = installation.permissions.get("organization_projects", "none")
    return ACCESS_LEVELS.index(granted) >= ACCESS_LEVELS.index(level)


def _project(state: StandinState, installation: Installation, project_id: object) -> Project | None:
    project = state.projects.by_id(project_id)
    if project is None or project.owner.casefold() != installation.account.casefold():
        return None
    return project


def project_fields(state: StandinState, installation: Installation, variables: dict[str, Any]) -> Json:
    """`organization(login) { projectV2(number) { id fields { nodes } } }`."""
    login, number = str(variables.get("login")), variables.get("number")
    if login.casefold() != installation.account.casefold() or installation.account_type != "Organization":
        message = f"Could not resolve to an Organization with the login of '{login}'."
        return _answer({"organization": None}, _error("NOT_FOUND", ["organization"], message))
    if not _may(installation, "read"):
        path = ["organization", "projectV2"]
        return _answer({"organization": {"projectV2": None}}, _error("FORBIDDEN", path, _FORBIDDEN))
    project = state.projects.boards.get((login.casefold(), number)) if isinstance(number, int) else None
    if project is None:
        message = f"Could not resolve to a ProjectV2 with the number {number}."
        errors = [_error("NOT_FOUND", ["organization", "projectV2"], message)]
        return _answer({"organization": {"projectV2": None}}, *errors)
    fields = {"nodes": [f.render() for f in project.fields[:50]]}
    return _answer({"organization": {"projectV2": {"id": project.id, "fields": fields}}})


def _item(project: Project, item_id: str) -> Json:
    item = project.items[item_id]
    values = [{"optionId": oid, "field": {"id": fid}} for fid, oid in item.values.items()]
    # Every item also has its Title value, which is not a single-select value: an empty object.
    return {"id": item.id, "project": {"id": project.id}, "fieldValues": {"nodes": [{}, *values]}}


def issue_items(state: StandinState, installation: Installation, variables: dict[str, Any]) -> Json:
    """`repository(owner, name) { issue(number) { id projectItems { nodes } } }`."""
    full_name = f"{variables.get('owner')}/{variables.get('name')}"
    repository = state.repository(full_name)
    if repository is None or installation.account.casefold() != str(variables.get("owner")).casefold():
        message = f"Could not resolve to a Repository with the name '{full_name}'."
        return _answer({"repository": None}, _error("NOT_FOUND", ["repository"], message))
    number = variables.get("number")
    if not isinstance(number, int) or number not in repository.issues or number in repository.pulls:
        message = f"Could not resolve to an Issue with the number of {number}."
        return _answer({"repository": {"issue": None}}, _error("NOT_FOUND", ["repository", "issue"], message))
    issue_id = issue_node_id(repository.id, number)
    if not _may(installation, "read"):
        path = ["repository", "issue", "projectItems"]
        return _answer({"repository": {"issue": None}}, _error("FORBIDDEN", path, _FORBIDDEN))
    nodes = [
        _item(project, item.id)
        for project in state.projects.boards.values()
        if project.owner.casefold() == installation.account.casefold()
        for item in project.items.values()
        if (item.repo.casefold(), item.number) == (repository.full_name.casefold(), number)
    ]
    issue = {"id": issue_id, "projectItems": {"nodes": nodes}}
    return _answer({"repository": {"issue": issue}})


def issue_node_id(repository_id: int, number: int) -> str:
    """The issue's node id, as its REST answer's `node_id` gives it."""
    return node_id_of("Issue", repository_id * 100_000 + number)


def _issue_of(state: StandinState, content_id: object) -> tuple[str, int] | None:
    for repository in state.repositories.values():
        for number in repository.issues:
            if number not in repository.pulls and issue_node_id(repository.id, number) == content_id:
                return repository.full_name, number
    return None


def add_item(state: StandinState, installation: Installation, variables: dict[str, Any]) -> Json:
    """`addProjectV2ItemById(input: {projectId, contentId}) { item { id } }`."""
    root = "addProjectV2ItemById"
    if not _may(installation, "write"):
        return _answer({root: None}, _error("FORBIDDEN", [root], _FORBIDDEN))
    project = _project(state, installation, variables.get("project"))
    issue = _issue_of(state, variables.get("content"))
    if project is None or issue is None:
        missing = variables.get("project") if project is None else variables.get("content")
        message = f"Could not resolve to a node with the global id of '{missing}'"
        return _answer({root: None}, _error("NOT_FOUND", [root], message))
    item = state.projects.add_item(project, *issue)
    return _answer({root: {"item": {"id": item.id}}})


def set_option(state: StandinState, installation: Installation, variables: dict[str, Any]) -> Json:
    """`updateProjectV2ItemFieldValue(input: {projectId, itemId, fieldId, value:
    {singleSelectOptionId}}) { projectV2Item { id } }`."""
    root = "updateProjectV2ItemFieldValue"
    if not _may(installation, "write"):
        return _answer({root: None}, _error("FORBIDDEN", [root], _FORBIDDEN))
    project = _project(state, installation, variables.get("project"))
    item = project.items.get(str(variables.get("item"))) if project is not None else None
    if project is None or item is None:
        missing = variables.get("project") if project is None else variables.get("item")
        message = f"Could not resolve to a node with the global id of '{missing}'"
        return _answer({root: None}, _error("NOT_FOUND", [root], message))
    chosen = next((f for f in project.fields if f.id == variables.get("field")), None)
    if chosen is None or chosen.data_type != "SINGLE_SELECT":
        return _answer({root: None}, _error(None, [root], "The field is not a single select field"))
    option = variables.get("option")
    if option not in dict(chosen.options):
        message = "The single select option Id does not belong to the field"
        return _answer({root: None}, _error(None, [root], message))
    item.values[chosen.id] = str(option)
    return _answer({root: {"projectV2Item": {"id": item.id}}})


SHAPES: list[tuple[tuple[str, ...], Resolver]] = [
    (("organization(", "projectV2(", "fields(", "ProjectV2SingleSelectField"), project_fields),
    (("repository(", "issue(", "projectItems(", "fieldValues("), issue_items),
    (("addProjectV2ItemById(", "contentId"), add_item),
    (("updateProjectV2ItemFieldValue(", "singleSelectOptionId"), set_option),
]
"""What each query railyard sends about projects contains, and what answers it."""


def resolver_for(query: str) -> Resolver | None:
    """The answer to a project query or mutation of a shape railyard sends (None: another)."""
    return next((resolve for parts, resolve in SHAPES if all(part in query for part in parts)), None)
