"""The deployment rail (SPEC: "The deployment rail"), no-code tickets and duplicate observations."""

from __future__ import annotations

import pytest

from policies.events import EventType, RailEvent
from policies.rails import (
    Observation,
    RailPolicy,
    Rails,
    apply_rail_event,
    decide_observation,
    observation_from_data,
    observation_to_data,
)
from policies.states import DeploymentState
from tests.unit.rail_builders import (
    DS,
    IS,
    MERGED,
    POLICY,
    T0,
    branch,
    check,
    context,
    deployment,
    fold,
    mergeability,
    pull_request,
    types,
)

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


def test_a_deployment_known_only_as_inactive_is_not_deploying() -> None:
    """A deployment whose newest status railyard read is `inactive` (a resync after a rollback:
    its success was never seen) is no longer running: not deploying, and not deployed."""
    inactive = deployment(1, "inactive", status_id=150)
    rollback = deployment(2, "success", contains=False)
    assert deployments_of(MERGED, inactive, rollback) == {"production": DS.NOT_DEPLOYED}
    assert deployments_of(MERGED, rollback, inactive) == {"production": DS.NOT_DEPLOYED}
    assert deployments_of(MERGED, deployment(1, None, status_id=0), inactive) == {
        "production": DS.NOT_DEPLOYED
    }


SECOND = pull_request(35, state="merged", at=4)


def test_a_ticket_merged_by_two_pull_requests_is_deployed_only_by_a_deployment_of_both() -> None:
    """#34 merged and deployment 1 shipped it; then #35 (linking the ticket too) merged. The
    change reached users only when a deployment contains both merges: 1 lacks #35's, so the
    ticket is not deployed again until deployment 2, which contains both."""
    first = [MERGED, deployment(1, "success", merge="merge-34")]
    assert deployments_of(*first) == {"production": DS.DEPLOYED}
    lacks = deployment(1, "success", contains=False, merge="merge-35")
    assert deployments_of(*first, SECOND, lacks) == {"production": DS.NOT_DEPLOYED}
    assert deployments_of(SECOND, lacks, *reversed(first)) == {"production": DS.NOT_DEPLOYED}
    both = [deployment(2, "success", merge=merge) for merge in ("merge-34", "merge-35")]
    assert deployments_of(*first, SECOND, lacks, *both) == {"production": DS.DEPLOYED}


def test_a_merge_no_deployment_was_asked_about_is_not_deployed() -> None:
    """A second merge whose containment nobody has asked yet does not ride on the first's answer."""
    observations = [MERGED, deployment(1, "success", merge="merge-34"), SECOND]
    assert deployments_of(*observations) == {"production": DS.NOT_DEPLOYED}


def test_a_deployment_event_recorded_before_answers_named_their_merge_still_reads() -> None:
    """A stored `deployment_observed` event without `compared_merge` folds as it did: its answer
    is for the ticket's merge commit, and it keeps its fingerprint."""
    stored = {
        "kind": "deployment", "deployment_id": 1, "environment": "production", "sha": "deploy-sha-1",
        "contains_merge": True, "status": "success", "status_id": 101,
    }  # fmt: skip
    old = observation_from_data(stored)
    assert old == deployment(1, "success") and observation_to_data(old) == stored
    assert deployments_of(MERGED, old) == {"production": DS.DEPLOYED}


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


CREATED_UNDER_PRODUCTION = Rails(deployments={"production": DS.NOT_DEPLOYED})


def test_the_headline_is_the_first_environment_configured_now() -> None:
    """A ticket created under `[production]`, the file now saying `[staging, production]`: a
    staging deployment makes the headline deployed (staging is listed first now)."""
    policy = RailPolicy(environments=("staging", "production"))
    staged = deployment(1, "success", environment="staging")
    result = fold([MERGED, staged], policy, rails=CREATED_UNDER_PRODUCTION)
    assert list(result.rails.deployments) == ["staging", "production"]
    assert result.rails.deployment is DS.DEPLOYED


def test_an_environment_no_longer_configured_leaves_the_rails() -> None:
    """Created under `[production]`, the file now says `[prod]`: production is configured
    nowhere, so it leaves the rails and prod's state is the headline; created under
    `[staging, production]`, the file now saying `[staging]`, production leaves as
    not_applicable even when nothing else moves."""
    policy = RailPolicy(environments=("prod",))
    result = fold([MERGED], policy, rails=CREATED_UNDER_PRODUCTION)
    assert dict(result.rails.deployments) == {"prod": DS.NOT_DEPLOYED}
    shipped = fold([MERGED, deployment(1, "success", environment="prod")], policy, CREATED_UNDER_PRODUCTION)
    assert shipped.rails.deployment is DS.DEPLOYED
    two = Rails(deployments={"staging": DS.NOT_DEPLOYED, "production": DS.NOT_DEPLOYED})
    result = fold([MERGED], RailPolicy(environments=("staging",)), rails=two)
    assert dict(result.rails.deployments) == {"staging": DS.NOT_DEPLOYED}
    moved = [e.data for e in result.events if e.type is EventType.DEPLOYMENT_STATE_CHANGED]
    assert moved == [
        {
            "environment": "production",
            "from": "not_deployed",
            "to": "not_applicable",
            "environments": ["staging"],
        }
    ]


def test_a_deployment_change_recorded_before_it_named_the_environments_still_reads() -> None:
    """A stored `deployment_state_changed` without `environments` updates its environment and
    keeps the others in their order, as it did."""
    old = RailEvent(
        EventType.DEPLOYMENT_STATE_CHANGED, "github", "github", T0, "op", "v1",
        {"environment": "staging", "from": None, "to": "deployed"},
    )  # fmt: skip
    rails = apply_rail_event(CREATED_UNDER_PRODUCTION, old)
    assert list(rails.deployments.items()) == [("production", DS.NOT_DEPLOYED), ("staging", DS.DEPLOYED)]


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
