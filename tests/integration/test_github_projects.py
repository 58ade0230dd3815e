"""`app.github.projects` (GitHub Projects through GraphQL) against the GitHub stand-in: the
project's fields, the issue's items, adding the issue, setting a single-select field, and what
GitHub answers for a project it cannot resolve or a permission the app lacks."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from app.github.client import GitHubClient, NotFound, PermissionDenied
from app.github.projects import ProjectsAdapter
from app.runtime.metrics import Metrics
from github_standin import StandinState, running_standin
from github_standin.projects import Project
from tests.fakes import app_settings

REPO = "acme/web"


@pytest.fixture
async def standin() -> AsyncIterator[tuple[ProjectsAdapter, StandinState, Project]]:
    """acme/web with issue #12, and acme's project 5 with Work and Code single-select fields."""
    state = StandinState()
    state.add_installation(7, "acme", permissions={"issues": "write", "organization_projects": "write"})
    state.add_repository(REPO)
    state.add_issue(REPO, 12)
    project = state.projects.add_project(
        "acme", 5, {"Work": ["open", "claimed"], "Code": ["PR open"], "Notes": None}
    )
    async with running_standin(state) as running:
        github = GitHubClient(app_settings("sqlite://", GITHUB_API_URL=running.url, APP_ID="1"), Metrics())
        await github.start()
        yield ProjectsAdapter(github), state, project
        await github.close()


async def test_a_project_answers_its_fields_with_the_single_select_options(
    standin: tuple[ProjectsAdapter, StandinState, Project],
) -> None:
    """Custom single-select fields come with their options; GitHub's own Repository field and a
    text field are not single-select."""
    adapter, _, project = standin
    board = await adapter.board(7, "acme", 5)
    assert board.id == project.id
    by_name = {field.name: field for field in board.fields}
    assert [name for _, name in by_name["Work"].options] == ["open", "claimed"]
    assert by_name["Work"].single_select and by_name["Status"].single_select
    assert not by_name["Repository"].single_select and not by_name["Notes"].single_select


async def test_an_issue_is_added_once_and_its_field_set(
    standin: tuple[ProjectsAdapter, StandinState, Project],
) -> None:
    """Adding twice answers the same item; the field's option is what the project shows after."""
    adapter, state, project = standin
    issue = await adapter.issue_items(7, REPO, 12)
    assert issue.items == {}
    item = await adapter.add_item(7, project.id, issue.issue_id)
    assert await adapter.add_item(7, project.id, issue.issue_id) == item
    work = project.field_named("Work")
    await adapter.set_option(7, project.id, item, work.id, work.options[1][0])
    assert state.projects.boards[("acme", 5)].values_of(REPO, 12) == {"Work": "claimed"}
    again = await adapter.issue_items(7, REPO, 12)
    assert again.items == {project.id: (item, {work.id: work.options[1][0]})}


async def test_an_unknown_project_or_issue_is_not_found(
    standin: tuple[ProjectsAdapter, StandinState, Project],
) -> None:
    """GitHub answers 200 with NOT_FOUND for a project number or an organization it cannot resolve."""
    adapter, _, _ = standin
    with pytest.raises(NotFound):
        await adapter.board(7, "acme", 6)
    with pytest.raises(NotFound):
        await adapter.board(7, "globex", 5)
    with pytest.raises(NotFound):
        await adapter.issue_items(7, REPO, 99)


async def test_without_the_projects_permission_github_answers_forbidden(
    standin: tuple[ProjectsAdapter, StandinState, Project],
) -> None:
    """No organization projects permission: reads are FORBIDDEN; read only: writes are."""
    adapter, state, project = standin
    state.installations[7].permissions["organization_projects"] = "read"
    issue = await adapter.issue_items(7, REPO, 12)
    with pytest.raises(PermissionDenied):
        await adapter.add_item(7, project.id, issue.issue_id)
    del state.installations[7].permissions["organization_projects"]
    with pytest.raises(PermissionDenied):
        await adapter.board(7, "acme", 5)
    [call, *_] = state.calls_to("POST", "/graphql")
    assert call.status == 200
