"""The CI state of a delivered commit (SPEC: "Acceptance that stays true"), from its checks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from policies.ci import CheckSeen, CiResult, CiState, ci_state


def run(name: str, conclusion: str | None = "success", status: str = "completed", id: int = 0) -> CheckSeen:
    """A check run of another app, completed with `conclusion` unless a status is given."""
    return CheckSeen(name, status, conclusion if status == "completed" else None, "ci-app", id)


HELD = CheckSeen("github-actions", "completed", "action_required", "github-actions", 9, suite=True)


def test_no_check_at_all_is_none() -> None:
    """A commit nothing has checked (or only railyard) has the state none."""
    assert ci_state([], ()) == CiResult(CiState.NONE, ())
    assert ci_state([run("railyard", "action_required")], ()) == CiResult(CiState.NONE, ())


def test_every_check_passing_is_passed_naming_them_all() -> None:
    """success, neutral and skipped all pass; the result names every check considered."""
    runs = [run("tests"), run("lint", "neutral"), run("docs", "skipped")]

    assert ci_state(runs, ()) == CiResult(CiState.PASSED, ("docs", "lint", "tests"))


@pytest.mark.parametrize(
    "conclusion", ["failure", "timed_out", "action_required", "startup_failure", "cancelled", "stale"]
)
def test_a_check_that_did_not_pass_fails_the_commit_naming_it(conclusion: str) -> None:
    """Any completed conclusion but success, neutral or skipped is a failure, and names its check."""
    runs = [run("tests", conclusion), run("lint")]

    assert ci_state(runs, ()) == CiResult(CiState.FAILED, ("tests",))


def test_railyards_own_check_never_counts() -> None:
    """railyard's own check (action_required while unaccepted) does not fail the commit's CI."""
    assert ci_state([run("railyard", "action_required"), run("tests")], ()) == CiResult(
        CiState.PASSED, ("tests",)
    )


def test_a_check_not_yet_completed_is_pending_naming_only_those() -> None:
    """queued or in-progress checks make the commit pending; the result names only them."""
    runs = [run("tests", status="in_progress"), run("lint"), run("e2e", status="queued")]

    assert ci_state(runs, ()) == CiResult(CiState.PENDING, ("e2e", "tests"))


def test_a_failure_decides_even_while_others_are_still_running() -> None:
    """One failed check is a failure however many others are pending or held."""
    runs = [run("tests", "failure"), run("lint", status="in_progress"), HELD]

    assert ci_state(runs, ()) == CiResult(CiState.FAILED, ("tests",))


def test_the_newest_run_of_a_name_decides_it() -> None:
    """A re-run replaces the one before it, in either direction, whatever order GitHub lists them."""
    fixed = [run("tests", "failure", id=1), run("tests", "success", id=2)]
    broken = [run("tests", "success", id=3), run("tests", "failure", id=4)]

    assert ci_state(fixed, ()).state is CiState.PASSED
    assert ci_state(list(reversed(fixed)), ()).state is CiState.PASSED
    assert ci_state(broken, ()) == CiResult(CiState.FAILED, ("tests",))


def test_with_required_checks_only_those_count() -> None:
    """With checks.required, a failing check it does not name does not fail the commit."""
    runs = [run("tests"), run("flaky", "failure")]

    assert ci_state(runs, ("tests",)) == CiResult(CiState.PASSED, ("tests",))


def test_a_required_check_without_a_run_yet_is_pending() -> None:
    """A required name GitHub shows no run of yet is still to come, so the commit is pending."""
    assert ci_state([run("tests")], ("tests", "build")) == CiResult(CiState.PENDING, ("build",))
    assert ci_state([], ("build",)) == CiResult(CiState.PENDING, ("build",))


def test_a_workflow_held_for_a_maintainers_approval_is_awaiting_approval() -> None:
    """A check suite GitHub holds (action_required, no runs) means CI has not run: awaiting approval."""
    assert ci_state([HELD], ()) == CiResult(CiState.AWAITING_APPROVAL, ("github-actions",))
    assert ci_state([HELD, run("other-ci")], ()).state is CiState.AWAITING_APPROVAL


def test_a_held_workflow_holds_back_the_required_checks_it_has_not_run() -> None:
    """With checks.required, a held suite makes the required names without a run awaiting approval."""
    assert ci_state([HELD, run("lint")], ("lint", "tests")) == CiResult(CiState.AWAITING_APPROVAL, ("tests",))
    assert ci_state([HELD, run("tests")], ("tests",)) == CiResult(CiState.PASSED, ("tests",))


def test_a_job_waiting_for_an_environments_reviewers_is_awaiting_approval() -> None:
    """A run `waiting` (an Actions job held for its environment's reviewers) is awaiting approval."""
    runs = [run("deploy-preview", status="waiting"), run("tests", status="in_progress")]

    assert ci_state(runs, ()) == CiResult(CiState.AWAITING_APPROVAL, ("deploy-preview",))


def test_a_suite_that_is_not_held_is_ignored() -> None:
    """A check suite with no runs that is merely queued (an app that never reports) changes nothing."""
    queued = CheckSeen("some-app", "queued", None, "some-app", 5, suite=True)

    assert ci_state([queued, run("tests")], ()) == CiResult(CiState.PASSED, ("tests",))
    assert ci_state([queued], ()) == CiResult(CiState.NONE, ())


# -- properties ------------------------------------------------------------------------------

NAMES = st.sampled_from(["tests", "lint", "build", "e2e", "docs"])
STATUSES = st.sampled_from(["queued", "in_progress", "completed", "waiting"])
CONCLUSIONS = st.sampled_from(["success", "neutral", "skipped", "failure", "cancelled", "timed_out"])
RUNS = st.lists(
    st.builds(
        lambda name, status, conclusion, id: run(name, conclusion, status, id),
        NAMES,
        STATUSES,
        CONCLUSIONS,
        st.integers(0, 50),
    ),
    max_size=8,
)
REQUIRED = st.lists(NAMES, max_size=3, unique=True).map(tuple)


@given(RUNS, REQUIRED, st.booleans(), st.sampled_from(["success", "failure", "action_required"]))
def test_a_check_that_is_not_considered_never_changes_the_state(
    runs: list[CheckSeen], required: tuple[str, ...], held: bool, conclusion: str
) -> None:
    """Adding railyard's own check, or (with required checks) one they do not name, changes nothing."""
    runs = [*runs, HELD] if held else runs
    before = ci_state(runs, required)
    outside = "railyard" if not required else "not-required"

    assert ci_state([*runs, run(outside, conclusion, id=99)], required) == before
    assert ci_state([run("railyard", conclusion, id=99), *runs], required) == before


@given(st.permutations(["tests", "lint", "build", "e2e", "docs"]), RUNS, REQUIRED)
def test_the_order_of_distinct_checks_does_not_matter(
    order: list[str], runs: list[CheckSeen], required: tuple[str, ...]
) -> None:
    """However GitHub orders the runs of different names, the state and the names are the same."""
    rank = {name: index for index, name in enumerate(order)}
    shuffled = sorted(runs, key=lambda r: rank[r.name])  # stable: runs of one name keep their order

    assert ci_state(shuffled, required) == ci_state(runs, required)


@given(RUNS, REQUIRED)
def test_a_failing_considered_check_always_fails_the_commit(
    runs: list[CheckSeen], required: tuple[str, ...]
) -> None:
    """A newest run that failed, of a name that counts, makes the commit failed, and is named."""
    name = required[0] if required else "tests"

    result = ci_state([*runs, run(name, "failure", id=1000)], required)

    assert result.state is CiState.FAILED and name in result.checks


def forged(name: str, id: int) -> CheckSeen:
    """A passing run of `name` by another app (any workflow with `checks: write` can create one)."""
    return CheckSeen(name, "completed", "success", "github-actions", id)


def test_a_passing_run_of_another_app_never_hides_a_checks_failure() -> None:
    """A newer run with the same name by another app cannot turn a failed check into a pass."""
    runs = [run("build", "failure", id=5), forged("build", 9)]

    assert ci_state(runs, ("build",)) == CiResult(CiState.FAILED, ("build",))
    assert ci_state(runs, ()) == CiResult(CiState.FAILED, ("build",))


def test_a_passing_run_of_another_app_never_passes_a_check_still_running() -> None:
    """A check still running stays pending whatever another app says under its name."""
    runs = [run("build", status="in_progress", id=5), forged("build", 9)]

    assert ci_state(runs, ("build",)) == CiResult(CiState.PENDING, ("build",))


def test_a_rerun_by_the_same_app_still_supersedes_its_failure() -> None:
    """The app's own newer run of a name decides it (a re-run after a flaky failure passes)."""
    runs = [run("build", "failure", id=5), run("build", id=9), forged("build", 7)]

    assert ci_state(runs, ("build",)) == CiResult(CiState.PASSED, ("build",))
