"""Why the repository rail is blocked: a failed check, CI held for approval, a conflict."""

from __future__ import annotations

from datetime import timedelta

from policies.blocking import Block, BlockReason, blocks
from policies.ci import CheckSeen, CiState, awaits_approval, ci_state
from policies.rails import (
    CheckObserved,
    MergeabilityObserved,
    PullRequestObserved,
    RailPolicy,
    integration_state,
)
from policies.states import IntegrationState, WorkState
from tests.fakes import START, Story

HEAD = "a1b2c3d4e5f6"


def with_open_pr() -> Story:
    """Ticket #12 claimed, PR #34 open at HEAD."""
    pr = PullRequestObserved(
        34, "https://github.com/acme/app/pull/34", True, True, False, HEAD, "agent/12", None,
        START + timedelta(minutes=30),
    )  # fmt: skip
    return Story().walk_to(WorkState.CLAIMED).observe(pr)


def check(name: str, conclusion: str, held: bool = False, check_id: int = 7) -> CheckObserved:
    return CheckObserved(HEAD, name, conclusion, check_id, START + timedelta(minutes=40), held)


def test_only_a_suite_held_without_runs_awaits_approval() -> None:
    """A suite that completed `action_required` with no runs waits to run (how GitHub holds a
    workflow for approval, whichever app's); a check run's `action_required` is a failing check,
    GitHub Actions' included (a workflow's step wrote it)."""
    assert awaits_approval("action_required", suite_without_runs=True)
    assert not awaits_approval("action_required")
    assert not awaits_approval("failure", suite_without_runs=True)


def test_ci_state_of_a_held_workflow_is_awaiting_approval_and_of_an_action_required_run_failed() -> None:
    """The acceptance's CI state reads a workflow held for approval (its suite, no runs) as awaiting
    approval, not failed; a check run a step wrote `action_required` is a failure."""
    held = CheckSeen("github-actions", "completed", "action_required", "github-actions", 3, suite=True)
    assert ci_state([held], ()).state is CiState.AWAITING_APPROVAL
    written = CheckSeen("lint", "completed", "action_required", "github-actions", 4)
    assert ci_state([written], ()).state is CiState.FAILED


def test_a_held_workflow_blocks_with_its_own_reason() -> None:
    """The rail is blocked, and the reason is CI awaiting approval, not a failing check."""
    story = with_open_pr().observe(check("build", "action_required", held=True))
    assert story.ticket.rails.integration is IntegrationState.BLOCKED
    assert blocks(story.ticket.rails) == [Block(34, BlockReason.CI_AWAITING_APPROVAL, ("build",))]


def test_failed_checks_and_conflicts_are_named_apart() -> None:
    """A failed check and a head that does not merge are two reasons; railyard's own check is none."""
    story = (
        with_open_pr()
        .observe(check("railyard", "action_required", check_id=1))
        .observe(check("lint", "failure", check_id=2))
        .observe(MergeabilityObserved(34, HEAD, False, START + timedelta(minutes=45)))
    )
    assert blocks(story.ticket.rails) == [
        Block(34, BlockReason.CHECK_FAILED, ("lint",)),
        Block(34, BlockReason.CONFLICT),
    ]


def test_only_required_checks_are_reasons_when_some_are_required() -> None:
    """With `checks.required`, a failing check outside it is no reason."""
    story = with_open_pr().observe(check("lint", "failure"))
    assert blocks(story.ticket.rails, RailPolicy(required_checks=("tests",))) == []


def held_suite(*, recorded_before_suites: bool = False) -> CheckObserved:
    """A fork's workflow held for approval: a github-actions suite, `action_required`, no runs."""
    at = START + timedelta(minutes=40)
    if recorded_before_suites:  # as logged before apps and suites were kept
        return CheckObserved(HEAD, "github-actions", "action_required", 99, at, True)
    return CheckObserved(HEAD, "github-actions", "action_required", 99, at, True, app_id=15368, suite=True)


def test_a_held_workflow_blocks_with_its_reason_when_checks_required_names_its_job() -> None:
    """`checks.required: [build]` and a fork's workflow held for approval: `build` has not run
    and will not until someone approves it, so the rail is blocked with "CI awaiting approval to
    run" for `build`, as the acceptance's CI judgement (`policies.ci`) says, also for a held
    suite logged before suites were marked."""
    policy = RailPolicy(required_checks=("build",))
    seen = CheckSeen("github-actions", "completed", "action_required", "github-actions", 99, suite=True)
    assert ci_state([seen], ("build",)).state is CiState.AWAITING_APPROVAL
    for suite in (held_suite(), held_suite(recorded_before_suites=True)):
        rails = with_open_pr().observe(suite).ticket.rails
        assert integration_state(rails, policy) is IntegrationState.BLOCKED
        assert blocks(rails, policy) == [Block(34, BlockReason.CI_AWAITING_APPROVAL, ("build",))]


def test_a_held_workflow_holds_back_no_required_check_that_already_ran() -> None:
    """A held workflow does not hold back a required `build` that another workflow already ran."""
    policy = RailPolicy(required_checks=("build",))
    rails = with_open_pr().observe(check("build", "success", check_id=5)).observe(held_suite()).ticket.rails
    assert integration_state(rails, policy) is IntegrationState.PULL_REQUEST_OPEN
    assert blocks(rails, policy) == []
