"""The repository and deployment rails: arrival order does not matter, and through the engine the
rails never write the work rail."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policies.commands import Claim, Command, Context, Publish
from policies.engine import apply, decide, observe
from policies.events import RAIL_EVENT_TYPES, Event, EventType, RailEvent
from policies.model import Actor, Ticket, TicketKey
from policies.rails import (
    BranchObserved,
    CheckObserved,
    DeploymentObserved,
    MergeabilityObserved,
    Observation,
    PullRequestObserved,
    RailPolicy,
    deployment_states,
    integration_state,
)
from policies.refusals import Refusal
from policies.states import Role, WorkState
from tests.unit.rail_builders import BRANCH, DS, IS, POLICY, context, fold, minute, pull_request

# -- properties: arrival order does not matter ---------------------------------------------

SHAS = ("h1", "h2", "h3")
REFS = (BRANCH, "agent/13-other")
BASES = (None, "main", "release-1")  # None: recorded before bases were kept
CHECK_NAMES = ("ci", "lint", "railyard")
CHECK_APPS = (None, 15368, 18001)
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
            base_ref=inner(st.sampled_from(BASES)),  # retargeted between observations
        )

    checks = st.builds(
        CheckObserved,
        st.sampled_from(SHAS),
        st.sampled_from(CHECK_NAMES),
        st.sampled_from(CONCLUSIONS),
        st.integers(min_value=1, max_value=3),
        times,
        app_id=st.sampled_from(CHECK_APPS),  # None: a check logged before apps were kept
        suite=st.booleans(),
    )
    answers = st.builds(
        MergeabilityObserved,
        st.integers(min_value=1, max_value=3),
        st.sampled_from(SHAS),
        st.sampled_from((None, True, False)),
        times,
        st.sampled_from(BASES),
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
