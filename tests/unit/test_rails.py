"""The repository and deployment rails (SPEC: "The repository rail", "The deployment rail")."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policies.commands import Claim, Command, Context, Publish
from policies.engine import apply, decide, observe
from policies.events import RAIL_EVENT_TYPES, Event, EventType, RailEvent
from policies.model import Actor, Ticket, TicketKey
from policies.rails import (
    FAILING_CONCLUSIONS,
    BranchObserved,
    CheckObserved,
    DeploymentObserved,
    MergeabilityObserved,
    Observation,
    ObservationContext,
    PullRequestObserved,
    RailPolicy,
    Rails,
    apply_rail_event,
    decide_observation,
    deployment_states,
    integration_state,
    observation_from_data,
    observation_to_data,
)
from policies.refusals import Refusal
from policies.states import DeploymentState, IntegrationState, Role, WorkState

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
IS = IntegrationState
DS = DeploymentState
POLICY = RailPolicy()
BRANCH = "agent/12-fix"


def minute(n: int) -> datetime:
    return T0 + timedelta(minutes=n)


def context(policy: RailPolicy = POLICY, operation_id: str = "op") -> ObservationContext:
    return ObservationContext("github", operation_id, T0, policy_version="v1", policy=policy)


# -- observation builders: realistic defaults, one thing varied per test ------------------


def branch(sha: str | None = "h1", at: int = 0, name: str = BRANCH) -> BranchObserved:
    return BranchObserved(branch=name, sha=sha, observed_at=minute(at))


def pull_request(
    number: int = 34,
    *,
    linked: bool = True,
    state: str = "open",
    head: str | None = "h1",
    ref: str | None = BRANCH,
    at: int = 1,
    at_merge: bool | None = None,
) -> PullRequestObserved:
    """A PR observation; a merged one is the merge event itself (its links are the links at
    merge) unless `at_merge` says otherwise."""
    merged = state == "merged"
    linked_at_merge = (linked if at_merge is None else at_merge) and merged
    return PullRequestObserved(
        number=number,
        url=f"https://github.com/acme/app/pull/{number}",
        linked=linked,
        open=state == "open",
        merged=merged,
        head_sha=head,
        head_ref=ref,
        merge_commit=f"merge-{number}" if merged else None,
        updated_at=minute(at),
        linked_at_merge=linked_at_merge,
    )


def check(
    conclusion: str | None, *, name: str = "ci", head: str = "h1", check_id: int = 1, at: int = 2
) -> CheckObserved:
    return CheckObserved(head, name, conclusion, check_id, minute(at))


def mergeability(
    mergeable: bool | None, *, number: int = 34, head: str = "h1", at: int = 2
) -> MergeabilityObserved:
    return MergeabilityObserved(number, head, mergeable, minute(at))


def deployment(
    deployment_id: int,
    status: str | None,
    *,
    contains: bool | None = True,
    environment: str = "production",
    status_id: int | None = None,
    at: int = 5,
) -> DeploymentObserved:
    sid = status_id if status_id is not None else (0 if status is None else deployment_id * 100 + 1)
    return DeploymentObserved(
        deployment_id, environment, f"deploy-sha-{deployment_id}", contains, status, sid
    )


MERGED = pull_request(state="merged", at=3)


@dataclass(frozen=True)
class Fold:
    """The rails after folding observations, the events recorded and the repository rail after each."""

    rails: Rails
    events: tuple[RailEvent, ...]
    integrations: tuple[IntegrationState, ...]


def fold(
    observations: Iterable[Observation], policy: RailPolicy = POLICY, rails: Rails | None = None
) -> Fold:
    """Decide and apply each observation in turn, as the worker does, from a newly created ticket."""
    if rails is None:
        rails = Rails(deployments={env: DS.NOT_DEPLOYED for env in policy.environments})
    events: list[RailEvent] = []
    integrations = [rails.integration]
    for i, observation in enumerate(observations):
        for event in decide_observation(rails, observation, context(policy, f"op-{i}")):
            rails = apply_rail_event(rails, event)
            events.append(event)
        integrations.append(rails.integration)
    return Fold(rails, tuple(events), tuple(integrations))


def integration_of(*observations: Observation, policy: RailPolicy = POLICY) -> IntegrationState:
    return fold(observations, policy).rails.integration


def types(events: Iterable[Event]) -> list[EventType]:
    return [e.type for e in events]


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


# -- the deployment rail ---------------------------------------------------------------------


def deployments_of(*observations: Observation, policy: RailPolicy = POLICY) -> dict[str, DeploymentState]:
    return dict(fold(observations, policy).rails.deployments)


def test_deployment_is_not_deployed_before_merge() -> None:
    """Before the ticket merges, even a successful deployment leaves the rail not_deployed."""
    result = fold([pull_request(), deployment(1, "success", contains=None)])
    assert result.rails.deployment is DS.NOT_DEPLOYED


def test_deployment_containing_the_merge_is_deployed() -> None:
    """The latest successful deployment containing the merge commit makes the rail deployed."""
    assert deployments_of(MERGED, deployment(1, "success")) == {"production": DS.DEPLOYED}


def test_deployment_seen_before_the_merge_is_deployed_once_merged() -> None:
    """A deployment that arrives before the merge counts once the ticket merges."""
    assert deployments_of(deployment(1, "success"), MERGED) == {"production": DS.DEPLOYED}


@pytest.mark.parametrize("status", ["in_progress", "queued", "pending", None])
def test_newest_containing_attempt_in_progress_is_deploying(status: str | None) -> None:
    """The newest attempt containing the merge, still running (or without status yet), is deploying."""
    assert deployments_of(MERGED, deployment(1, status)) == {"production": DS.DEPLOYING}


@pytest.mark.parametrize("status", ["failure", "error"])
def test_newest_containing_attempt_failing_is_failed(status: str) -> None:
    """The newest attempt containing the merge ending in failure or error is failed."""
    assert deployments_of(MERGED, deployment(1, status)) == {"production": DS.FAILED}


def test_status_is_taken_from_the_newest_containing_attempt() -> None:
    """A failed attempt followed by a newer one in progress is deploying, not failed."""
    observations: list[Observation] = [MERGED, deployment(1, "failure"), deployment(2, "in_progress")]
    assert deployments_of(*observations) == {"production": DS.DEPLOYING}
    assert deployments_of(*reversed(observations)) == {"production": DS.DEPLOYING}


def test_statuses_of_one_deployment_are_ordered_by_status_id() -> None:
    """A deployment's newest status wins, whatever order its statuses arrive in."""
    pending = deployment(1, "pending", status_id=101)
    failed = deployment(1, "failure", status_id=102)
    assert deployments_of(MERGED, failed, pending) == {"production": DS.FAILED}


def test_deployment_without_the_merge_is_not_deployed() -> None:
    """A merged ticket whose deployments do not contain the merge commit is not_deployed."""
    assert deployments_of(MERGED, deployment(1, "success", contains=False)) == {"production": DS.NOT_DEPLOYED}


def test_rollback_to_a_deployment_without_the_merge_is_not_deployed() -> None:
    """A later successful deployment without the merge commit (a rollback) yields not_deployed."""
    result = fold([MERGED, deployment(1, "success"), deployment(2, "success", contains=False)])
    assert result.rails.deployment is DS.NOT_DEPLOYED
    changes = [e.data["to"] for e in result.events if e.type is EventType.DEPLOYMENT_STATE_CHANGED]
    assert changes == ["deployed", "not_deployed"]


def test_rollback_is_not_deployed_when_the_superseded_deployment_goes_inactive() -> None:
    """After a rollback, GitHub marking the rolled-back deployment inactive leaves it not_deployed."""
    inactive = deployment(1, "inactive", status_id=150)
    rollback = deployment(2, "success", contains=False)
    assert deployments_of(MERGED, deployment(1, "success"), rollback, inactive) == {
        "production": DS.NOT_DEPLOYED
    }


def test_inactive_status_does_not_undo_a_success() -> None:
    """GitHub's `inactive` on a superseded deployment does not erase that it succeeded."""
    success = deployment(1, "success", status_id=101)
    inactive = deployment(1, "inactive", status_id=102)
    newer = deployment(2, "in_progress")
    assert deployments_of(MERGED, success, newer, inactive) == {"production": DS.DEPLOYED}
    assert deployments_of(MERGED, inactive, newer, success) == {"production": DS.DEPLOYED}


def test_environments_are_kept_separately() -> None:
    """Each configured environment has its own deployment state."""
    policy = RailPolicy(environments=("staging", "production"))
    observations: list[Observation] = [
        MERGED,
        deployment(1, "success", environment="staging"),
        deployment(2, "failure"),
    ]
    assert deployments_of(*observations, policy=policy) == {"staging": DS.DEPLOYED, "production": DS.FAILED}


def test_deployment_to_an_unconfigured_environment_is_recorded_but_moves_nothing() -> None:
    """A deployment to an environment not in the configuration has no rail of its own."""
    result = fold([MERGED, deployment(1, "success", environment="preview")])
    assert dict(result.rails.deployments) == {"production": DS.NOT_DEPLOYED}
    assert result.events[-1].type is EventType.DEPLOYMENT_OBSERVED


@pytest.mark.parametrize(
    ("environments", "headline"),
    [(("staging", "production"), DS.DEPLOYED), (("production", "staging"), DS.NOT_DEPLOYED)],
)
def test_headline_is_the_first_configured_environment(
    environments: tuple[str, ...], headline: DeploymentState
) -> None:
    """The headline deployment state is the first environment listed in the configuration."""
    policy = RailPolicy(environments=environments)
    result = fold([MERGED, deployment(1, "success", environment="staging")], policy)
    assert result.rails.deployment is headline


def test_no_environments_configured_is_not_applicable() -> None:
    """With no environments configured the headline deployment state is not_applicable."""
    policy = RailPolicy(environments=())
    result = fold([MERGED, deployment(1, "success")], policy)
    assert result.rails.deployment is DS.NOT_APPLICABLE
    assert EventType.DEPLOYMENT_STATE_CHANGED not in types(result.events)


# -- no-code tickets and duplicates --------------------------------------------------------


@pytest.mark.parametrize(
    "observation",
    [branch("h1"), pull_request(), MERGED, check("failure"), mergeability(False), deployment(1, "success")],
)
def test_no_code_rails_produce_no_events(observation: Observation) -> None:
    """A no-code ticket's rails are not_applicable for good: observations produce no events."""
    rails = Rails(deployments={"production": DS.NOT_DEPLOYED}).not_applicable()
    assert decide_observation(rails, observation, context()) == ()
    assert rails.integration is IS.NOT_APPLICABLE
    assert rails.deployment is DS.NOT_APPLICABLE


@pytest.mark.parametrize(
    "observation",
    [branch("h1"), branch(None), pull_request(), MERGED, check("failure"), deployment(1, "success")],
)
def test_same_observation_twice_produces_no_second_event(observation: Observation) -> None:
    """An observation already recorded (a redelivered webhook) produces no event the second time."""
    once = fold([MERGED, observation])
    assert decide_observation(once.rails, observation, context()) == ()


def test_observation_event_carries_the_context() -> None:
    """Recorded rail events carry the actor, operation id, time and policy version, with role github."""
    (event, *_) = decide_observation(Rails(), branch("h1"), context(operation_id="delivery-7"))
    assert (event.actor, event.role, event.at, event.operation_id, event.policy_version) == (
        "github",
        "github",
        T0,
        "delivery-7",
        "v1",
    )


# -- properties: arrival order does not matter ---------------------------------------------

SHAS = ("h1", "h2", "h3")
REFS = (BRANCH, "agent/13-other")
CHECK_NAMES = ("ci", "lint", "railyard")
CONCLUSIONS = (None, "success", "neutral", "failure", "timed_out", "action_required")
DEPLOY_STATUSES = ("success", "failure", "error", "in_progress", "queued", "pending", "inactive")
ENVIRONMENTS = ("production", "staging")
POLICIES = (
    RailPolicy(),
    RailPolicy(environments=("staging", "production"), required_checks=("ci",)),
    RailPolicy(environments=()),
)
times = st.integers(min_value=0, max_value=2).map(minute)


@st.composite
def observation_lists(draw: st.DrawFn) -> list[Observation]:
    """Observations of one ticket, from small pools so that collisions and ties happen.

    Facts GitHub never contradicts are drawn once per world: a deployment's environment,
    sha and whether it contains the merge; the status behind a status id; a PR's merge commit.
    """
    contains = draw(st.lists(st.booleans(), min_size=4, max_size=4))
    linked_when_merged = draw(st.lists(st.booleans(), min_size=3, max_size=3))
    status_of = draw(st.lists(st.sampled_from(DEPLOY_STATUSES), min_size=4, max_size=4))

    branches = st.builds(BranchObserved, st.sampled_from(REFS), st.sampled_from((*SHAS, None)), times)

    @st.composite
    def pull_requests(inner: st.DrawFn) -> PullRequestObserved:
        number = inner(st.integers(min_value=1, max_value=3))
        state = inner(st.sampled_from(("open", "closed", "merged")))
        # Whether the PR linked the ticket at its merge is a fact of the world; an observation
        # made after the merge (an edit) may lack the evidence, never contradict it.
        evidence = state == "merged" and linked_when_merged[number - 1] and inner(st.booleans())
        return PullRequestObserved(
            number=number,
            url=f"https://github.com/acme/app/pull/{number}",
            linked=inner(st.booleans()),
            open=state == "open",
            merged=state == "merged",
            head_sha=inner(st.sampled_from(SHAS)),
            head_ref=inner(st.sampled_from(REFS)),
            merge_commit=f"merge-{number}" if state == "merged" else None,
            updated_at=inner(times),
            linked_at_merge=evidence,
        )

    checks = st.builds(
        CheckObserved,
        st.sampled_from(SHAS),
        st.sampled_from(CHECK_NAMES),
        st.sampled_from(CONCLUSIONS),
        st.integers(min_value=1, max_value=3),
        times,
    )
    answers = st.builds(
        MergeabilityObserved,
        st.integers(min_value=1, max_value=3),
        st.sampled_from(SHAS),
        st.sampled_from((None, True, False)),
        times,
    )

    @st.composite
    def deployments(inner: st.DrawFn) -> DeploymentObserved:
        deployment_id = inner(st.integers(min_value=1, max_value=4))
        status_id = inner(st.integers(min_value=0, max_value=4))
        known = inner(st.booleans())
        return DeploymentObserved(
            deployment_id=deployment_id,
            environment=ENVIRONMENTS[deployment_id % 2],
            sha=f"deploy-sha-{deployment_id}",
            contains_merge=contains[deployment_id - 1] if known else None,
            status=None if status_id == 0 else status_of[status_id - 1],
            status_id=status_id,
        )

    kinds = st.one_of(branches, pull_requests(), checks, answers, deployments())
    return draw(st.lists(kinds, max_size=14))


def recorded_observations(events: Iterable[Event]) -> set[str]:
    observed = (EventType.REPOSITORY_OBSERVED, EventType.DEPLOYMENT_OBSERVED)
    return {json.dumps(dict(e.data), sort_keys=True) for e in events if e.type in observed}


PROPERTY_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY_SETTINGS
@given(data=st.data(), observations=observation_lists(), policy=st.sampled_from(POLICIES))
def test_final_rails_and_recorded_observations_do_not_depend_on_arrival_order(
    data: st.DataObject, observations: list[Observation], policy: RailPolicy
) -> None:
    """Any permutation of the same observations gives the same rails and the same recorded set."""
    shuffled: Sequence[Observation] = data.draw(st.permutations(observations))
    first, second = fold(observations, policy), fold(shuffled, policy)
    assert first.rails.integration is second.rails.integration
    assert dict(first.rails.deployments) == dict(second.rails.deployments)
    assert first.rails.deployment is second.rails.deployment
    assert recorded_observations(first.events) == recorded_observations(second.events)
    assert first.rails == second.rails


@PROPERTY_SETTINGS
@given(observations=observation_lists(), policy=st.sampled_from(POLICIES))
def test_every_decided_event_is_a_rail_event(observations: list[Observation], policy: RailPolicy) -> None:
    """decide_observation only ever returns RailEvents of the rail event types."""
    for event in fold(observations, policy).events:
        assert isinstance(event, RailEvent)
        assert event.type in RAIL_EVENT_TYPES


@PROPERTY_SETTINGS
@given(observations=observation_lists(), policy=st.sampled_from(POLICIES))
def test_folded_rails_equal_the_rails_recomputed_from_the_facts(
    observations: list[Observation], policy: RailPolicy
) -> None:
    """After folding, the recorded rails are exactly what the facts and the policy say."""
    rails = fold(observations, policy).rails
    assert rails.integration is integration_state(rails, policy)
    if observations:
        assert dict(rails.deployments) == deployment_states(rails, policy)
        expected = rails.deployments[policy.environments[0]] if policy.environments else DS.NOT_APPLICABLE
        assert rails.deployment is expected


@PROPERTY_SETTINGS
@given(observations=observation_lists(), policy=st.sampled_from(POLICIES))
def test_merged_never_leaves_merged(observations: list[Observation], policy: RailPolicy) -> None:
    """Once the repository rail is merged, no later observation moves it anywhere else."""
    states = fold(observations, policy).integrations
    if IS.MERGED in states:
        assert set(states[states.index(IS.MERGED) :]) == {IS.MERGED}


# -- through the engine: rails never write the work rail -------------------------------------


def claimed_ticket() -> Ticket:
    """A published ticket claimed by a runner, built through decide and apply."""
    ticket = Ticket(TicketKey("acme/app", 12))
    steps: list[tuple[Command, Actor]] = [
        (Publish(description="Fix the parser."), Actor("lead", frozenset({Role.TASK_OWNER}))),
        (Claim(branch=BRANCH), Actor("coder-bot[bot]", frozenset({Role.RUNNER}))),
    ]
    for n, (command, actor) in enumerate(steps):
        decision = decide(ticket, command, Context(actor, f"comment-{n}", minute(n)))
        assert not isinstance(decision, Refusal), decision
        for event in decision:
            ticket = apply(ticket, event)
    assert ticket.work is WorkState.CLAIMED
    return ticket


CLAIMED = claimed_ticket()


@settings(max_examples=60, deadline=None)
@given(observations=observation_lists())
def test_rail_observations_never_change_the_work_rail(observations: list[Observation]) -> None:
    """Repository and deployment observations leave WorkState, claimant, attempt and delivery alone."""
    ticket = CLAIMED
    for n, observation in enumerate(observations):
        events = observe(ticket, observation, context(operation_id=f"delivery-{n}"))
        assert not isinstance(events, Refusal)
        for event in events:
            before = ticket.revision
            ticket = apply(ticket, event)
            assert ticket.revision == before + 1
            assert (ticket.work, ticket.claimant, ticket.attempt, ticket.last_delivery) == (
                WorkState.CLAIMED,
                "coder-bot[bot]",
                1,
                None,
            )
    assert ticket.rails.integration is integration_state(ticket.rails, POLICY)


def test_observation_about_an_issue_that_is_not_a_ticket_is_refused() -> None:
    """Observations about an issue that is not a ticket create nothing."""
    result = observe(Ticket(TicketKey("acme/app", 99)), pull_request(), context())
    assert isinstance(result, Refusal)
