"""The repository rail (SPEC: "The repository rail"): branches, pull requests, checks and merges."""

from __future__ import annotations

from dataclasses import replace

import pytest

from policies.events import EventType
from policies.rails import (
    FAILING_CONCLUSIONS,
    PullRequestObserved,
    RailPolicy,
    observation_from_data,
    observation_to_data,
)
from tests.unit.rail_builders import (
    BRANCH,
    IS,
    MERGED,
    branch,
    check,
    fold,
    integration_of,
    mergeability,
    minute,
    pull_request,
    types,
)

# -- the repository rail -------------------------------------------------------------------


def test_verified_branch_is_reported() -> None:
    """A branch that exists with a head sha moves the rail to branch_reported."""
    assert integration_of(branch("h1")) is IS.BRANCH_REPORTED


def test_branch_not_found_is_recorded_but_stays_unreported() -> None:
    """A branch looked up and not found is recorded as such, and the rail stays unreported."""
    result = fold([branch(None)])
    assert types(result.events) == [EventType.REPOSITORY_OBSERVED]
    assert result.events[0].data["sha"] is None
    assert result.rails.branches[BRANCH].sha is None
    assert result.rails.integration is IS.UNREPORTED


def test_linked_open_pull_request_opens_the_rail() -> None:
    """An open PR that links the ticket moves the rail to pull_request_open."""
    result = fold([pull_request()])
    assert result.rails.integration is IS.PULL_REQUEST_OPEN
    assert result.events[-1].data == {"from": "unreported", "to": "pull_request_open"}


def test_unlinked_pull_request_is_ignored() -> None:
    """An open PR that does not link the ticket leaves the rail where it was."""
    assert integration_of(pull_request(linked=False)) is IS.UNREPORTED
    assert integration_of(branch("h1"), pull_request(linked=False)) is IS.BRANCH_REPORTED


@pytest.mark.parametrize("conclusion", sorted(FAILING_CONCLUSIONS))
def test_failing_check_on_current_head_blocks(conclusion: str) -> None:
    """A check other than railyard's own completing as a failure on the PR's head blocks it."""
    assert integration_of(pull_request(head="h1"), check(conclusion, head="h1")) is IS.BLOCKED


@pytest.mark.parametrize("conclusion", ["success", "neutral", "skipped", None])
def test_passing_or_pending_check_does_not_block(conclusion: str | None) -> None:
    """A check that passed, was skipped or has not completed does not block."""
    assert integration_of(pull_request(), check(conclusion)) is IS.PULL_REQUEST_OPEN


def test_railyards_own_failing_check_does_not_block() -> None:
    """railyard's own check reporting action_required never blocks the PR."""
    own = check("action_required", name="railyard")
    assert integration_of(pull_request(), own) is IS.PULL_REQUEST_OPEN


def test_failing_check_on_an_older_head_does_not_block() -> None:
    """Once the PR's head moves on, a failure on the old head no longer blocks."""
    moved = fold([pull_request(head="h1", at=1), check("failure", head="h1"), pull_request(head="h2", at=3)])
    assert moved.integrations == (IS.UNREPORTED, IS.PULL_REQUEST_OPEN, IS.BLOCKED, IS.PULL_REQUEST_OPEN)


def test_failing_check_on_an_older_head_arriving_late_does_not_block() -> None:
    """A failure on a superseded head that arrives after the new head changes nothing."""
    assert integration_of(pull_request(head="h2", at=3), check("failure", head="h1")) is IS.PULL_REQUEST_OPEN


def test_unrequired_check_does_not_block_when_required_checks_are_set() -> None:
    """With checks.required set, a failing check not named there does not block."""
    policy = RailPolicy(required_checks=("ci",))
    assert (
        integration_of(pull_request(), check("failure", name="lint"), policy=policy) is IS.PULL_REQUEST_OPEN
    )


def test_required_check_blocks_when_required_checks_are_set() -> None:
    """With checks.required set, a failing check named there blocks."""
    policy = RailPolicy(required_checks=("ci",))
    assert integration_of(pull_request(), check("failure", name="ci"), policy=policy) is IS.BLOCKED


def test_successful_rerun_clears_blocked() -> None:
    """A later successful rerun of the failing check moves the rail back to pull_request_open."""
    result = fold([pull_request(), check("failure", check_id=1, at=2), check("success", check_id=2, at=4)])
    assert result.integrations == (IS.UNREPORTED, IS.PULL_REQUEST_OPEN, IS.BLOCKED, IS.PULL_REQUEST_OPEN)


def test_earlier_failure_arriving_after_the_successful_rerun_does_not_block() -> None:
    """The older failing run, delivered late, does not override the newer successful rerun."""
    result = fold([pull_request(), check("success", check_id=2, at=4), check("failure", check_id=1, at=2)])
    assert result.rails.integration is IS.PULL_REQUEST_OPEN


ACTIONS, CIRCLECI = 15368, 18001


def test_another_apps_passing_check_of_the_same_name_does_not_hide_a_failure() -> None:
    """GitHub Actions' `build` failed; another app's `build` passed later. Both stand on the head
    (GitHub shows both), so the rail stays blocked in either order of arrival."""
    failed = check("failure", name="build", check_id=501, at=2, app_id=ACTIONS)
    passed = check("success", name="build", check_id=777, at=3, app_id=CIRCLECI)
    for order in ([failed, passed], [passed, failed]):
        assert integration_of(pull_request(), *order) is IS.BLOCKED
    rerun = check("success", name="build", check_id=502, at=4, app_id=ACTIONS)
    assert integration_of(pull_request(), failed, passed, rerun) is IS.PULL_REQUEST_OPEN


def test_a_workflow_that_failed_to_start_is_not_hidden_by_another_workflows_suite() -> None:
    """Every GitHub Actions workflow run is a suite named `github-actions`: `ci.yml` could not
    start (suite 9, `startup_failure`), `lint.yml` passed a minute later (suite 10). The startup
    failure still stands on the head, in either order; a rerun of suite 9 that passes clears it."""
    failed = replace(
        check("startup_failure", name="github-actions", check_id=9, at=2, app_id=ACTIONS), suite=True
    )
    other = replace(failed, conclusion="success", check_id=10, completed_at=minute(3))
    for order in ([failed, other], [other, failed]):
        assert integration_of(pull_request(), *order) is IS.BLOCKED
    rerun = replace(failed, conclusion="success", completed_at=minute(4))
    assert integration_of(pull_request(), failed, other, rerun) is IS.PULL_REQUEST_OPEN


def test_a_check_recorded_before_apps_were_kept_still_folds_and_gives_way_to_a_newer_run() -> None:
    """A check event logged before `app_id` existed reads back as it was (same fingerprint, no
    app); its failure stands against an older run of a known app, and a newer rerun clears it."""
    data = observation_to_data(check("failure", check_id=1, at=2, app_id=ACTIONS))
    del data["app_id"]
    old = observation_from_data(data)
    assert old == check("failure", check_id=1, at=2) and observation_to_data(old) == data
    older = check("success", check_id=0, at=1, app_id=ACTIONS)
    newer = check("success", check_id=2, at=4, app_id=ACTIONS)
    for order in ([old, older], [older, old]):
        assert integration_of(pull_request(), *order) is IS.BLOCKED
    for order in ([old, newer], [newer, old]):
        result = fold([pull_request(), *order])
        assert result.rails.integration is IS.PULL_REQUEST_OPEN
        assert [c.app_id for c in result.rails.checks.values()] == [ACTIONS]


def test_unmergeable_pull_request_at_current_head_blocks() -> None:
    """The PR API reporting the current head unmergeable blocks the PR."""
    assert integration_of(pull_request(head="h1"), mergeability(False, head="h1")) is IS.BLOCKED


def test_unmergeable_answer_for_an_older_head_does_not_block() -> None:
    """An unmergeable answer about a head the PR has moved past does not block."""
    assert integration_of(pull_request(head="h2"), mergeability(False, head="h1")) is IS.PULL_REQUEST_OPEN


def test_mergeable_again_clears_blocked() -> None:
    """A newer mergeable answer for the same head moves the rail back to pull_request_open."""
    result = fold([pull_request(), mergeability(False, at=2), mergeability(True, at=4)])
    assert result.integrations[-2:] == (IS.BLOCKED, IS.PULL_REQUEST_OPEN)


def test_merged_linked_pull_request_is_merged_with_its_merge_commit() -> None:
    """A linked PR closed with merged: true moves the rail to merged and records the merge commit."""
    result = fold([pull_request(at=1), MERGED])
    assert result.rails.integration is IS.MERGED
    assert result.rails.merge_commit == "merge-34"
    assert any(e.data.get("merge_commit") == "merge-34" for e in result.events)


def test_merged_is_final_when_the_pull_request_is_later_unlinked() -> None:
    """Editing the merged PR's body to drop the link does not move the rail back."""
    unlinked = pull_request(linked=False, state="merged", at=9)
    result = fold([MERGED, unlinked])
    assert result.rails.integration is IS.MERGED
    assert result.rails.merge_commit == "merge-34"


def test_merged_is_final_when_an_older_open_event_arrives_late() -> None:
    """An out-of-order `opened` observation older than the merge records nothing but itself."""
    result = fold([MERGED, pull_request(state="open", at=1)])
    assert result.rails.integration is IS.MERGED
    assert types(result.events) == [
        EventType.REPOSITORY_OBSERVED,
        EventType.MERGE_STATE_CHANGED,
        EventType.REPOSITORY_OBSERVED,
    ]


def test_merged_is_final_when_a_later_observation_says_closed() -> None:
    """A later observation of the PR as closed, or of a failing check, does not move merged back."""
    closed = pull_request(state="closed", at=9)
    assert integration_of(MERGED, closed, check("failure", head="h1", at=10)) is IS.MERGED


def test_merged_unlinked_pull_request_is_not_merged() -> None:
    """A PR that merges without linking the ticket does not make the ticket merged."""
    result = fold([branch("h1"), pull_request(linked=False, state="merged")])
    assert result.rails.integration is IS.BRANCH_REPORTED
    assert result.rails.merge_commit is None


def test_a_link_added_by_editing_a_merged_pull_request_does_not_merge_the_ticket() -> None:
    """Editing a merged, unrelated PR's body to link the ticket records the link but never merges it."""
    unrelated_merge = pull_request(linked=False, state="merged", at=3)
    edited_after = pull_request(linked=True, state="merged", at=9, at_merge=False)
    for order in ([unrelated_merge, edited_after], [edited_after, unrelated_merge], [edited_after]):
        result = fold([branch("h1"), *order])
        assert result.rails.integration is IS.BRANCH_REPORTED
        assert result.rails.merge_commit is None
        assert result.rails.pull_requests[34].linked is True  # the newer, edited body wins


def test_a_link_removed_after_the_merge_does_not_undo_the_merge_in_any_order() -> None:
    """The merge event's links decide; an edit after the merge that drops the link changes nothing."""
    dropped = pull_request(linked=False, state="merged", at=9, at_merge=False)
    for order in ([MERGED, dropped], [dropped, MERGED]):
        result = fold(order)
        assert result.rails.integration is IS.MERGED
        assert result.rails.merge_commit == "merge-34"


def test_an_observation_recorded_before_linked_at_merge_existed_reads_as_it_was_judged() -> None:
    """Old log entries lack `linked_at_merge`: a merged, linked one still merged the ticket."""
    data = observation_to_data(MERGED)
    del data["linked_at_merge"]
    restored = observation_from_data(data)
    assert isinstance(restored, PullRequestObserved) and restored.linked_at_merge is True


def test_closed_unmerged_pull_request_falls_back_to_another_open_linked_pull_request() -> None:
    """With one linked PR closed unmerged, another open linked PR keeps the rail at pull_request_open."""
    closed = pull_request(34, state="closed", at=5)
    assert integration_of(branch("h1"), pull_request(34), pull_request(35), closed) is IS.PULL_REQUEST_OPEN


def test_closed_unmerged_pull_request_falls_back_to_a_branch_that_still_verifies() -> None:
    """With no other open linked PR, a branch that still verifies gives branch_reported."""
    result = fold([branch("h1", at=0), pull_request(at=1), pull_request(state="closed", at=5)])
    assert result.integrations == (
        IS.UNREPORTED,
        IS.BRANCH_REPORTED,
        IS.PULL_REQUEST_OPEN,
        IS.BRANCH_REPORTED,
    )


def test_closed_unmerged_pull_request_falls_back_to_unreported_when_the_branch_is_gone() -> None:
    """With no open linked PR and the branch no longer found, the rail is unreported."""
    gone = branch(None, at=6)
    result = fold([branch("h1", at=0), pull_request(at=1), pull_request(state="closed", at=5), gone])
    assert result.rails.integration is IS.UNREPORTED


def test_closed_pull_request_does_not_fall_back_to_an_unlinked_open_pull_request() -> None:
    """An open PR that does not link the ticket is not a fallback for a closed linked one."""
    observations = [pull_request(34), pull_request(35, linked=False), pull_request(34, state="closed", at=5)]
    assert integration_of(*observations) is IS.UNREPORTED
