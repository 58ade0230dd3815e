"""The repository and deployment rails, decided from observations.

Observations go in, rail events come out. The facts they carry are merged with a join
that is commutative, associative and idempotent, and the rails are a function of the
merged facts alone, so the final rails do not depend on the order events arrive in.
Nothing here can name a WorkState: `decide_observation` returns `RailEvent`s only, and
`apply_rail_event` receives and returns `Rails`, never a ticket.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import Any, TypeVar

from policies.check_facts import FAILING_CONCLUSIONS as FAILING_CONCLUSIONS
from policies.check_facts import CheckFact, CheckKey, holding_back, join_check
from policies.deployment_facts import (  # the deployment facts are named here too, with the others
    DeploymentFact as DeploymentFact,
)
from policies.deployment_facts import (
    DeploymentObserved as DeploymentObserved,
)
from policies.deployment_facts import (
    deployment_changes,
    deployment_fact,
    deployments_after,
    environment_state_of,
    join_deployment,
)
from policies.events import EventType, RailEvent
from policies.states import DeploymentState, IntegrationState

OWN_CHECK_NAME = "railyard"


# -- observations: what GitHub told us, in the app's own words -----------------------


@dataclass(frozen=True)
class BranchObserved:
    """A branch was reported (by a delivery or a push) and looked up: `sha=None` is "not found"."""

    branch: str
    sha: str | None
    observed_at: datetime


@dataclass(frozen=True)
class PullRequestObserved:
    """A pull request as of `updated_at`, and whether it links the ticket at that moment.

    `linked_at_merge` is the shell's evidence that the PR linked the ticket when it merged
    (the merge event's own body, or a branch reported before `merged_at`). Only that makes
    a ticket `merged`: a link added by editing a merged PR is recorded (`linked`) but never
    merges anything (SPEC: Links).
    """

    number: int
    url: str
    linked: bool
    open: bool
    merged: bool
    head_sha: str | None
    head_ref: str | None
    merge_commit: str | None
    updated_at: datetime
    linked_at_merge: bool = False
    # A fork's PR from an account without a role names the ticket: shown, never on the rail.
    mention: bool = False
    base_ref: str | None = None  # the branch it targets (None: recorded before bases were kept)


@dataclass(frozen=True)
class CheckObserved:
    """A check on a commit; `conclusion=None` while it has not completed."""

    head_sha: str
    name: str
    conclusion: str | None
    check_id: int
    completed_at: datetime
    awaiting_approval: bool = False  # `action_required` while GitHub waits to be let run it (policies.ci)
    app_id: int | None = None  # the app that ran it: names are kept per app (policies.check_facts)
    suite: bool = False  # a check suite (named by its app's slug, kept by its id)


@dataclass(frozen=True)
class MergeabilityObserved:
    """What the pull-request API said about mergeability of one head into one base."""

    number: int
    head_sha: str
    mergeable: bool | None
    observed_at: datetime
    base_ref: str | None = None  # the base GitHub answered for (None: recorded before bases were kept)


Observation = BranchObserved | PullRequestObserved | CheckObserved | MergeabilityObserved | DeploymentObserved
OBSERVATIONS = (
    BranchObserved,
    PullRequestObserved,
    CheckObserved,
    MergeabilityObserved,
    DeploymentObserved,
)
_KINDS: dict[str, type[Any]] = {
    "branch": BranchObserved,
    "pull_request": PullRequestObserved,
    "check": CheckObserved,
    "mergeability": MergeabilityObserved,
    "deployment": DeploymentObserved,
}
_KIND_OF = {cls: kind for kind, cls in _KINDS.items()}


def observation_to_data(observation: Observation) -> dict[str, Any]:
    """A JSON-ready dict, tagged with the observation's kind."""
    data: dict[str, Any] = {"kind": _KIND_OF[type(observation)]}
    for f in fields(observation):
        value = getattr(observation, f.name)
        if f.name in _OMITTED_WHEN_DEFAULT and value is _OMITTED_WHEN_DEFAULT[f.name]:
            continue  # absent as before it existed: the same fact keeps its fingerprint
        data[f.name] = value.isoformat() if isinstance(value, datetime) else value
    return data


_OMITTED_WHEN_DEFAULT: dict[str, Any] = {
    "mention": False,
    "awaiting_approval": False,
    "app_id": None,
    "suite": False,
    "compared_merge": None,
    "base_ref": None,
}


def _legacy(data: Mapping[str, Any], name: str) -> Any:
    """A field recorded before it existed: events written then were judged by the rule of then
    (a merged PR linking the ticket merged it), and the log is never rewritten."""
    if name == "linked_at_merge":
        return bool(data.get("merged") and data.get("linked"))
    if name in _OMITTED_WHEN_DEFAULT:
        return _OMITTED_WHEN_DEFAULT[name]
    raise KeyError(name)


def observation_from_data(data: Mapping[str, Any]) -> Observation:
    """The inverse of `observation_to_data`."""
    cls = _KINDS[data["kind"]]
    values = {}
    for f in fields(cls):
        value = data[f.name] if f.name in data else _legacy(data, f.name)
        is_time = f.name.endswith("_at") and isinstance(value, str)
        values[f.name] = datetime.fromisoformat(value) if is_time else value
    result: Observation = cls(**values)
    return result


def fingerprint(observation: Observation) -> str:
    """Identity of an observation: the same fact twice has the same fingerprint."""
    canonical = json.dumps(observation_to_data(observation), sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:24]


# -- facts: the join of every observation so far --------------------------------------


@dataclass(frozen=True)
class BranchFact:
    """The newest lookup of one reported branch."""

    sha: str | None
    observed_at: datetime


@dataclass(frozen=True)
class PullRequestFact:
    """The newest state of one pull request; `merged_while_linked` never goes back."""

    number: int
    url: str
    linked: bool
    open: bool
    head_sha: str | None
    head_ref: str | None
    updated_at: datetime
    merged_while_linked: bool = False
    merge_commit: str | None = None
    mention: bool = False  # named by a fork's PR whose links do not count (SPEC: Links)
    base_ref: str | None = None
    same_second_heads: tuple[str, ...] = ()
    """Every head the PR was seen with at `updated_at` (sorted; () in snapshots from before it
    was kept: `head_sha` alone). GitHub gives whole seconds: two pushes in one second leave two
    observations that rank by sha, not by which came last, so `head_sha` may be the older
    head. Each of these gets the check written again when the ticket changes (`heads`)."""

    @property
    def heads(self) -> tuple[str, ...]:
        """The heads whose check follows the ticket: the same-second heads, or `head_sha`."""
        if self.same_second_heads:
            return self.same_second_heads
        return (self.head_sha,) if self.head_sha else ()


SAME_SECOND_HEADS = 8
"""Heads kept for one second at most (the largest shas: a bound on pushes a second, not a choice)."""


@dataclass(frozen=True)
class MergeabilityFact:
    """The newest mergeability answer for one pull-request head into one base."""

    number: int
    head_sha: str
    mergeable: bool | None
    observed_at: datetime
    base_ref: str | None = None


MergeabilityKey = tuple[int, str, str | None]
"""(PR number, head sha, base ref): None for answers recorded before bases were kept."""


@dataclass(frozen=True)
class Rails:
    """The repository and deployment rails of one ticket, with the evidence behind them."""

    applicable: bool = True
    integration: IntegrationState = IntegrationState.UNREPORTED
    deployments: Mapping[str, DeploymentState] = field(default_factory=dict)
    branches: Mapping[str, BranchFact] = field(default_factory=dict)
    pull_requests: Mapping[int, PullRequestFact] = field(default_factory=dict)
    checks: Mapping[CheckKey, CheckFact] = field(default_factory=dict)
    mergeability: Mapping[MergeabilityKey, MergeabilityFact] = field(default_factory=dict)
    deployment_facts: Mapping[int, DeploymentFact] = field(default_factory=dict)
    seen: frozenset[str] = frozenset()

    @property
    def deployment(self) -> DeploymentState:
        """The headline: the first configured environment's state."""
        if not self.applicable or not self.deployments:
            return DeploymentState.NOT_APPLICABLE
        return next(iter(self.deployments.values()))

    @property
    def merge_commit(self) -> str | None:
        """The merge commit of the linked PR that merged, once one has."""
        merged = sorted(p.number for p in self.pull_requests.values() if p.merged_while_linked)
        return self.pull_requests[merged[0]].merge_commit if merged else None

    @property
    def merge_commits(self) -> tuple[str, ...]:
        """The merge commit of every linked PR that merged, by PR number: the ticket's change
        reached users when a deployment contains them all."""
        merged = (p for _, p in sorted(self.pull_requests.items()) if p.merged_while_linked)
        return tuple(p.merge_commit for p in merged if p.merge_commit)

    def not_applicable(self) -> Rails:
        """A no-code ticket: both rails `not_applicable` for good."""
        return replace(
            self,
            applicable=False,
            integration=IntegrationState.NOT_APPLICABLE,
            deployments={env: DeploymentState.NOT_APPLICABLE for env in self.deployments},
        )


@dataclass(frozen=True)
class RailPolicy:
    """The configuration the rails are decided under."""

    environments: tuple[str, ...] = ("production",)
    required_checks: tuple[str, ...] = ()
    own_check_name: str = OWN_CHECK_NAME


@dataclass(frozen=True)
class ObservationContext:
    """Who reported the observation, when it was recorded, under which policy."""

    actor: str
    operation_id: str
    at: datetime
    policy_version: str = ""
    policy: RailPolicy = field(default_factory=RailPolicy)
    actor_id: int | None = None  # the account whose action GitHub reported (the payload's sender)


_F = TypeVar("_F")


def _newer(old: _F | None, new: _F, rank: Any) -> _F:
    """The fact that wins the join: the higher rank; ranks are total, so order never matters."""
    if old is None:
        return new
    return new if rank(new) > rank(old) else old


def _join_pull_request(old: PullRequestFact | None, new: PullRequestFact) -> PullRequestFact:
    def rank(p: PullRequestFact) -> tuple[Any, ...]:
        heads = (p.head_sha or "", p.head_ref or "", p.base_ref or "")
        return (p.updated_at, not p.open, p.linked, *heads, p.url)

    winner = _newer(old, new, rank)
    if old is None:
        return winner
    return replace(
        winner,
        merged_while_linked=old.merged_while_linked or new.merged_while_linked,
        merge_commit=old.merge_commit or new.merge_commit,
        same_second_heads=_same_second_heads(old, new),
    )


def _same_second_heads(old: PullRequestFact, new: PullRequestFact) -> tuple[str, ...]:
    """The heads of the newer second; of both, when they share it (a union: order never matters)."""
    if old.updated_at != new.updated_at:
        return (new if new.updated_at > old.updated_at else old).heads
    return tuple(sorted(set(old.heads) | set(new.heads))[-SAME_SECOND_HEADS:])


def join(rails: Rails, observation: Observation) -> Rails:
    """Merge one observation into the facts (the rails themselves are not recomputed)."""
    seen = rails.seen | {fingerprint(observation)}
    match observation:
        case BranchObserved(branch=branch):
            fact = BranchFact(observation.sha, observation.observed_at)
            winner = _newer(rails.branches.get(branch), fact, lambda b: (b.observed_at, b.sha or ""))
            return replace(rails, seen=seen, branches={**rails.branches, branch: winner})
        case PullRequestObserved(number=number):
            pr = _join_pull_request(rails.pull_requests.get(number), pull_request_fact(observation))
            return replace(rails, seen=seen, pull_requests={**rails.pull_requests, number: pr})
        case CheckObserved():
            check = CheckFact(**{f.name: getattr(observation, f.name) for f in fields(CheckFact)})
            return replace(rails, seen=seen, checks=join_check(rails.checks, check))
        case MergeabilityObserved(number=number, head_sha=sha, base_ref=base):
            answer = MergeabilityFact(number, sha, observation.mergeable, observation.observed_at, base)
            winner_answer = _newer(rails.mergeability.get((number, sha, base)), answer, _answer_rank)
            mergeability = {**rails.mergeability, (number, sha, base): winner_answer}
            return replace(rails, seen=seen, mergeability=mergeability)
        case DeploymentObserved(deployment_id=deployment_id):
            deployment = join_deployment(
                rails.deployment_facts.get(deployment_id), deployment_fact(observation)
            )
            facts = {**rails.deployment_facts, deployment_id: deployment}
            return replace(rails, seen=seen, deployment_facts=facts)
    raise TypeError(f"not an observation: {observation!r}")


def pull_request_fact(o: PullRequestObserved) -> PullRequestFact:
    """The fact one PR observation tells (before it is joined with what was known)."""
    return PullRequestFact(
        number=o.number,
        url=o.url,
        linked=o.linked,
        open=o.open and not o.merged,
        head_sha=o.head_sha,
        head_ref=o.head_ref,
        updated_at=o.updated_at,
        merged_while_linked=o.merged and o.linked_at_merge,
        merge_commit=o.merge_commit if o.merged and o.linked_at_merge else None,
        mention=o.mention and not o.linked,
        base_ref=o.base_ref,
        same_second_heads=(o.head_sha,) if o.head_sha else (),
    )


def _answer_rank(m: MergeabilityFact) -> tuple[Any, ...]:
    return (m.observed_at, str(m.mergeable), m.base_ref or "")


def mergeability_of(rails: Rails, pr: PullRequestFact) -> MergeabilityFact | None:
    """The newest answer on whether the PR's current head merges into its current base: an
    answer for another base (before a retarget) says nothing; one recorded before bases were
    kept stands in for any base, as does any answer for a PR whose base is not known."""
    head = [m for (n, sha, _), m in rails.mergeability.items() if (n, sha) == (pr.number, pr.head_sha or "")]
    if pr.base_ref is not None:
        head = [m for m in head if m.base_ref == pr.base_ref] or [m for m in head if m.base_ref is None]
    return max(head, key=_answer_rank, default=None)


# -- the rails as functions of the facts ---------------------------------------------


def _is_blocked(rails: Rails, pr: PullRequestFact, policy: RailPolicy) -> bool:
    failing, held = holding_back(
        rails.checks.values(), pr.head_sha, policy.required_checks, policy.own_check_name
    )
    if failing or held:
        return True
    answer = mergeability_of(rails, pr)
    return answer is not None and answer.mergeable is False


def integration_state(rails: Rails, policy: RailPolicy) -> IntegrationState:
    """The repository rail as SPEC defines it, from the facts alone."""
    if not rails.applicable:
        return IntegrationState.NOT_APPLICABLE
    if any(p.merged_while_linked for p in rails.pull_requests.values()):
        return IntegrationState.MERGED
    open_prs = [p for p in rails.pull_requests.values() if p.linked and p.open]
    if open_prs:
        if any(_is_blocked(rails, p, policy) for p in open_prs):
            return IntegrationState.BLOCKED
        return IntegrationState.PULL_REQUEST_OPEN
    if any(b.sha is not None for b in rails.branches.values()):
        return IntegrationState.BRANCH_REPORTED
    return IntegrationState.UNREPORTED


def environment_state(rails: Rails, environment: str) -> DeploymentState:
    """One environment's deployment rail as SPEC defines it, ordered by deployment id."""
    if not rails.applicable:
        return DeploymentState.NOT_APPLICABLE
    if rails.merge_commit is None:
        return DeploymentState.NOT_DEPLOYED
    return environment_state_of(rails.deployment_facts.values(), environment, rails.merge_commits)


def deployment_states(rails: Rails, policy: RailPolicy) -> dict[str, DeploymentState]:
    """Every configured environment's state, in configuration order."""
    return {env: environment_state(rails, env) for env in policy.environments}


# -- decide and apply ----------------------------------------------------------------


def decide_observation(
    rails: Rails, observation: Observation, ctx: ObservationContext
) -> tuple[RailEvent, ...]:
    """Record an observation seen for the first time, and any rail it moves.

    Returns nothing for a fact already recorded and for no-code tickets.
    """
    if not rails.applicable or fingerprint(observation) in rails.seen:
        return ()
    after = join(rails, observation)
    kind = (
        EventType.DEPLOYMENT_OBSERVED
        if isinstance(observation, DeploymentObserved)
        else EventType.REPOSITORY_OBSERVED
    )
    events = [_rail_event(kind, ctx, observation_to_data(observation))]
    events.extend(rail_changes(after, ctx))
    return tuple(events)


def rail_changes(rails: Rails, ctx: ObservationContext) -> list[RailEvent]:
    """The events that bring the recorded rails in line with the facts and the policy."""
    events = []
    integration = integration_state(rails, ctx.policy)
    if integration != rails.integration:
        change = {"from": rails.integration.value, "to": integration.value}
        events.append(_rail_event(EventType.MERGE_STATE_CHANGED, ctx, change))
    for moved in deployment_changes(rails.deployments, deployment_states(rails, ctx.policy)):
        events.append(_rail_event(EventType.DEPLOYMENT_STATE_CHANGED, ctx, moved))
    return events


def _rail_event(kind: EventType, ctx: ObservationContext, data: dict[str, Any]) -> RailEvent:
    return RailEvent(
        kind, ctx.actor, "github", ctx.at, ctx.operation_id, ctx.policy_version, data, ctx.actor_id
    )


def apply_rail_event(rails: Rails, event: RailEvent) -> Rails:
    """Fold one rail event into the rails."""
    data = event.data
    if event.type in (EventType.REPOSITORY_OBSERVED, EventType.DEPLOYMENT_OBSERVED):
        return join(rails, observation_from_data(data))
    if event.type == EventType.MERGE_STATE_CHANGED:
        return replace(rails, integration=IntegrationState(data["to"]))
    return replace(rails, deployments=deployments_after(rails.deployments, data))
