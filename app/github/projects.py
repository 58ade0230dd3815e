"""GitHub Projects through GraphQL: an organization's project and its fields, an issue's items,
adding the issue, and setting a single-select field (`projects:` in `.github/railyard.yml`).

The shapes relied on (GitHub's schema, @octokit/graphql-schema): `organization(login)
{projectV2(number)}` with `fields` (a union: only `ProjectV2SingleSelectField` has `options`),
`Issue.projectItems` (archived items included) with each item's `project.id` and its
`fieldValues` (`ProjectV2ItemFieldSingleSelectValue.optionId` and its `field`), and the
mutations `addProjectV2ItemById` (answers the existing item when the issue is already there)
and `updateProjectV2ItemFieldValue` with `value: {singleSelectOptionId}`. A project GitHub
cannot resolve answers 200 with a NOT_FOUND error (`NotFound`), a missing permission FORBIDDEN
(`PermissionDenied`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.github.client import GitHubClient, NotFound
from policies.projects import Board, BoardField

ENDPOINT = "graphql_projects"
PAGE = 50  # GitHub allows 50 fields a project; an issue in more than 50 projects is not expected

PROJECT_FIELDS = """
query($login: String!, $number: Int!) {
  organization(login: $login) {
    projectV2(number: $number) {
      id
      fields(first: 50) {
        nodes {
          __typename
          ... on ProjectV2FieldCommon { id name }
          ... on ProjectV2SingleSelectField { options { id name } }
        }
      }
    }
  }
}
"""

ISSUE_ITEMS = """
query($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    issue(number: $number) {
      id
      projectItems(first: 50) {
        nodes {
          id
          project { id }
          fieldValues(first: 50) {
            nodes {
              ... on ProjectV2ItemFieldSingleSelectValue {
                optionId
                field { ... on ProjectV2FieldCommon { id } }
              }
            }
          }
        }
      }
    }
  }
}
"""

ADD_ITEM = """
mutation($project: ID!, $content: ID!) {
  addProjectV2ItemById(input: {projectId: $project, contentId: $content}) { item { id } }
}
"""

SET_OPTION = """
mutation($project: ID!, $item: ID!, $field: ID!, $option: String!) {
  updateProjectV2ItemFieldValue(
    input: {projectId: $project, itemId: $item, fieldId: $field, value: {singleSelectOptionId: $option}}
  ) { projectV2Item { id } }
}
"""


@dataclass(frozen=True)
class IssueItems:
    """An issue's node id and its items by project id: (item id, field id to option id)."""

    issue_id: str
    items: Mapping[str, tuple[str, Mapping[str, str]]]


def _nodes(value: Any, *path: str) -> list[dict[str, Any]]:
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    nodes = value.get("nodes") if isinstance(value, dict) else None
    return [node for node in nodes or [] if isinstance(node, dict)]


def _field(node: Mapping[str, Any]) -> BoardField | None:
    if not isinstance(node.get("id"), str) or not isinstance(node.get("name"), str):
        return None
    single = node.get("__typename") == "ProjectV2SingleSelectField"
    options = tuple((str(o["id"]), str(o["name"])) for o in node.get("options") or [] if isinstance(o, dict))
    return BoardField(node["id"], node["name"], single, options if single else ())


def _values(item: Mapping[str, Any]) -> dict[str, str]:
    values = {}
    for value in _nodes(item, "fieldValues"):
        field_id = (value.get("field") or {}).get("id")
        if isinstance(field_id, str) and isinstance(value.get("optionId"), str):
            values[field_id] = value["optionId"]
    return values


class ProjectsAdapter:
    """The GraphQL calls that keep a ticket's project items showing its rails."""

    def __init__(self, github: GitHubClient) -> None:
        self._github = github

    async def _ask(self, installation_id: int, query: str, variables: Mapping[str, Any]) -> Any:
        return await self._github.graphql(installation_id, query, variables, endpoint=ENDPOINT)

    async def board(self, installation_id: int, owner: str, number: int) -> Board:
        """The organization's project `number` and its fields (`NotFound`: no such project)."""
        data = await self._ask(installation_id, PROJECT_FIELDS, {"login": owner, "number": number})
        project = (data.get("organization") or {}).get("projectV2")
        if not isinstance(project, dict) or not isinstance(project.get("id"), str):
            raise NotFound(404, f"no project {owner}/{number}")
        fields = (_field(node) for node in _nodes(project, "fields"))
        return Board(project["id"], tuple(field for field in fields if field is not None))

    async def issue_items(self, installation_id: int, repository: str, number: int) -> IssueItems:
        """The issue's node id and its items in every project (`NotFound`: no such issue)."""
        owner, _, name = repository.partition("/")
        data = await self._ask(installation_id, ISSUE_ITEMS, {"owner": owner, "name": name, "number": number})
        issue = (data.get("repository") or {}).get("issue")
        if not isinstance(issue, dict) or not isinstance(issue.get("id"), str):
            raise NotFound(404, f"no issue {repository}#{number}")
        items = {}
        for item in _nodes(issue, "projectItems"):
            project_id = (item.get("project") or {}).get("id")
            if isinstance(project_id, str) and isinstance(item.get("id"), str):
                items[project_id] = (item["id"], _values(item))
        return IssueItems(issue["id"], items)

    async def add_item(self, installation_id: int, project_id: str, content_id: str) -> str:
        """Add the issue to the project; the item's id (the existing one if it was there)."""
        variables = {"project": project_id, "content": content_id}
        data = await self._ask(installation_id, ADD_ITEM, variables)
        return str(data["addProjectV2ItemById"]["item"]["id"])

    async def set_option(
        self, installation_id: int, project_id: str, item_id: str, field_id: str, option_id: str
    ) -> None:
        """Set one single-select field of the item."""
        variables = {"project": project_id, "item": item_id, "field": field_id, "option": option_id}
        await self._ask(installation_id, SET_OPTION, variables)
