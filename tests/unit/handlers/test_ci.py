"""`handlers.ci.ci_of`: a commit's CI state from the check runs and suites GitHub lists on it."""

from __future__ import annotations

from handlers.ci import ci_of
from policies.ci import CiResult, CiState
from tests.fakes.github import FakeGitHub

REPO, SHA = "acme/web", "a" * 40


async def test_the_state_is_judged_over_the_required_checks() -> None:
    """With required checks, only they count, and one without a run yet keeps the commit pending."""
    github = FakeGitHub()
    github.add_check_run(REPO, SHA, "tests")
    github.add_check_run(REPO, SHA, "flaky", "failure")

    assert await ci_of(github, 7, REPO, SHA, ("tests",)) == CiResult(CiState.PASSED, ("tests",))
    assert await ci_of(github, 7, REPO, SHA, ("tests", "build")) == CiResult(CiState.PENDING, ("build",))
    assert await ci_of(github, 7, REPO, SHA, ()) == CiResult(CiState.FAILED, ("flaky",))


async def test_a_suite_held_for_approval_without_runs_is_awaiting_approval() -> None:
    """A suite `action_required` with no runs is a workflow waiting for a maintainer; one with runs is not."""
    github = FakeGitHub()
    github.add_check_suite(REPO, SHA, "action_required")
    github.add_check_suite(REPO, SHA, "action_required", runs=1, app_slug="railyard")

    assert await ci_of(github, 7, REPO, SHA, ()) == CiResult(CiState.AWAITING_APPROVAL, ("github-actions",))


async def test_a_commit_nothing_checked_is_none() -> None:
    """No run and no suite: the CI state is none."""
    assert await ci_of(FakeGitHub(), 7, REPO, SHA, ()) == CiResult(CiState.NONE, ())
