"""What the rails' tests share: realistic observations (one thing varied per test) and folding them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from policies.events import Event, EventType, RailEvent
from policies.rails import (
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
)
from policies.states import DeploymentState, IntegrationState

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
    base: str | None = None,
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
        base_ref=base,
    )


def check(
    conclusion: str | None,
    *,
    name: str = "ci",
    head: str = "h1",
    check_id: int = 1,
    at: int = 2,
    app_id: int | None = None,
) -> CheckObserved:
    return CheckObserved(head, name, conclusion, check_id, minute(at), app_id=app_id)


def mergeability(
    mergeable: bool | None, *, number: int = 34, head: str = "h1", at: int = 2, base: str | None = None
) -> MergeabilityObserved:
    """An answer of the PR API; `base=None` as answers recorded before bases were kept."""
    return MergeabilityObserved(number, head, mergeable, minute(at), base)


def deployment(
    deployment_id: int,
    status: str | None,
    *,
    contains: bool | None = True,
    environment: str = "production",
    status_id: int | None = None,
    at: int = 5,
    merge: str | None = None,
) -> DeploymentObserved:
    """A deployment observation; `contains` answers for `merge` (None: as events recorded
    before answers named their merge, for the ticket's merge commit)."""
    sid = status_id if status_id is not None else (0 if status is None else deployment_id * 100 + 1)
    return DeploymentObserved(
        deployment_id, environment, f"deploy-sha-{deployment_id}", contains, status, sid, merge
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
