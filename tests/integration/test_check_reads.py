"""A commit's check runs and suites read through the GitHub API (respx): every page, encoded paths,
and the CI state judged from them."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
import respx

from app.github.client import GitHubClient
from app.github.reads import GitHubReadsAdapter
from github_standin import StandinState
from handlers.ci import ci_of
from handlers.errors import Missing
from policies.ci import CiResult, CiState
from support.world import CI_APP_ID, FIX, REPO, standin_state
from tests.fakes import GITHUB_API
from tests.integration.standin_reads import reads_over

SHA = "c" * 40
RUNS = f"{GITHUB_API}/repos/acme/web/commits/{SHA}/check-runs"
SUITES = f"{GITHUB_API}/repos/acme/web/commits/{SHA}/check-suites"


def check_run(run_id: int, name: str, conclusion: str | None, status: str = "completed") -> dict[str, object]:
    """A check run as GitHub lists it, by another app."""
    return {
        "id": run_id, "name": name, "head_sha": SHA, "status": status, "conclusion": conclusion,
        "app": {"id": 15368, "slug": "github-actions"},
    }  # fmt: skip


def paged(route: respx.Route, key: str, pages: list[list[dict[str, object]]], url: str) -> None:
    """Answer each page in turn, with GitHub's Link header pointing at the next one."""
    total = sum(len(page) for page in pages)
    answers = []
    for number, page in enumerate(pages, start=1):
        link = {"Link": f'<{url}?per_page=100&page={number + 1}>; rel="next"'} if number < len(pages) else {}
        answers.append(httpx.Response(200, json={"total_count": total, key: page}, headers=link))
    route.side_effect = answers


async def test_every_page_of_a_commits_check_runs_is_read(github: GitHubClient) -> None:
    """Runs on later pages are read too (100 a page), following GitHub's Link header."""
    route = respx.get(RUNS)
    first = [check_run(i, f"job-{i}", "success") for i in range(100)]
    paged(route, "check_runs", [first, [check_run(500, "tests", "failure")]], RUNS)

    runs = await GitHubReadsAdapter(github).check_runs(7, "acme/web", SHA)

    assert [r["id"] for r in runs] == [*range(100), 500]
    assert route.calls[0].request.url.params["per_page"] == "100"
    assert route.calls[1].request.url.params["page"] == "2"


async def test_a_commits_check_suites_are_read(github: GitHubClient) -> None:
    """The commit's check suites are listed, every page."""
    suite = {"id": 77, "status": "completed", "conclusion": "action_required", "latest_check_runs_count": 0}
    paged(respx.get(SUITES), "check_suites", [[suite]], SUITES)

    assert await GitHubReadsAdapter(github).check_suites(7, "acme/web", SHA) == [suite]


async def test_the_repository_in_the_path_is_percent_encoded(github: GitHubClient) -> None:
    """A name with characters a path gives meaning to is sent encoded, not as more path."""
    route = respx.get(url__regex=r".*/repos/acme/we%3Fb/commits/.*/check-runs.*").mock(
        return_value=httpx.Response(200, json={"total_count": 0, "check_runs": []})
    )

    assert await GitHubReadsAdapter(github).check_runs(7, "acme/we?b", SHA) == []
    assert route.called


async def test_an_unknown_commit_is_missing(github: GitHubClient) -> None:
    """GitHub's 422 "No commit found" is `Missing`, as for the other commit reads."""
    respx.get(RUNS).mock(
        return_value=httpx.Response(422, json={"message": f"No commit found for SHA: {SHA}"})
    )

    with pytest.raises(Missing):
        await GitHubReadsAdapter(github).check_runs(7, "acme/web", SHA)


async def test_the_ci_state_is_judged_from_what_github_lists(github: GitHubClient) -> None:
    """A re-run that passed replaces the failure it re-ran; railyard's own check is left out."""
    runs = [
        check_run(3, "tests", "success"),
        check_run(1, "tests", "failure"),
        check_run(2, "railyard", "action_required"),
    ]
    paged(respx.get(RUNS), "check_runs", [runs], RUNS)
    paged(respx.get(SUITES), "check_suites", [[]], SUITES)

    result = await ci_of(GitHubReadsAdapter(github), 7, "acme/web", SHA, ())

    assert result == CiResult(CiState.PASSED, ("tests",))


async def test_a_workflow_held_for_approval_is_read_from_its_suite(github: GitHubClient) -> None:
    """A fork's workflow GitHub will not run before approval has no runs; its suite says it is held."""
    held = {
        "id": 77, "status": "completed", "conclusion": "action_required", "latest_check_runs_count": 0,
        "app": {"id": 15368, "slug": "github-actions"},
    }  # fmt: skip
    paged(respx.get(RUNS), "check_runs", [[]], RUNS)
    paged(respx.get(SUITES), "check_suites", [[held]], SUITES)

    result = await ci_of(GitHubReadsAdapter(github), 7, "acme/web", SHA, ())

    assert result == CiResult(CiState.AWAITING_APPROVAL, ("github-actions",))


# -- against the stand-in, with the app's own client ------------------------------------------


@pytest.fixture
async def standin() -> AsyncIterator[tuple[GitHubReadsAdapter, StandinState]]:
    """The adapter over a client talking to the e2e stand-in state (PR #34 at FIX)."""
    state = standin_state()
    async with reads_over(state) as reads:
        yield reads, state


async def test_a_commits_ci_is_judged_over_every_page_the_standin_lists(
    standin: tuple[GitHubReadsAdapter, StandinState],
) -> None:
    """A failing check past the first 100 runs is found, and another commit's runs are not counted."""
    reads, state = standin
    for number in range(120):
        state.add_check_run(REPO, f"job-{number:03}", FIX, conclusion="success", app_id=CI_APP_ID)
    state.add_check_run(REPO, "job-000", FIX, conclusion="failure", app_id=CI_APP_ID)  # a re-run, newest
    state.add_check_run(REPO, "elsewhere", "9" * 40, conclusion="failure", app_id=CI_APP_ID)
    installation = next(iter(state.installations))

    result = await ci_of(reads, installation, REPO, FIX, ())

    assert result == CiResult(CiState.FAILED, ("job-000",))
    assert len(await reads.check_runs(installation, REPO, FIX)) == 120


async def test_a_held_workflow_on_the_standin_is_awaiting_approval(
    standin: tuple[GitHubReadsAdapter, StandinState],
) -> None:
    """A held suite on the stand-in (no runs, action_required) is awaiting approval, beside railyard's run."""
    reads, state = standin
    state.add_check_suite(REPO, FIX, app_id=CI_APP_ID, status="completed", conclusion="action_required")
    state.add_check_run(REPO, "railyard", FIX, conclusion="action_required")
    installation = next(iter(state.installations))

    result = await ci_of(reads, installation, REPO, FIX, ())

    assert result == CiResult(CiState.AWAITING_APPROVAL, ("github-actions",))


async def test_the_merged_pull_requests_that_brought_a_commit(github: GitHubClient) -> None:
    """`GET .../commits/{sha}/pulls`: the merged pull requests only (an open one whose head the
    commit is does not count); a commit GitHub does not have (422) was brought by none."""
    url = f"{GITHUB_API}/repos/acme/web/commits/{SHA}/pulls"
    listed = [{"number": 40, "merged_at": "2026-11-30T10:30:00Z"}, {"number": 41, "merged_at": None}]
    route = respx.get(url).mock(return_value=httpx.Response(200, json=listed))
    assert await GitHubReadsAdapter(github).merged_pulls_of_commit(7, "acme/web", SHA) == [40]
    route.mock(return_value=httpx.Response(422, json={"message": f"No commit found for SHA: {SHA}"}))
    assert await GitHubReadsAdapter(github).merged_pulls_of_commit(7, "acme/web", SHA) == []
