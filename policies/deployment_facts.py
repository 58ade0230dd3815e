"""The deployment rail's facts: what GitHub said about each deployment, and which of a ticket's
merges each deployment contains (SPEC: The deployment rail).

A ticket's change reached users when a deployment contains every merge of it: each pull request
that merged while linking it. A second PR merging after the first was deployed is not deployed
by that deployment unless it contains that merge too. So a containment answer names the merge
it was asked for (`compared_merge`), and the rail reads one answer per merge.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from policies.states import DeploymentState

DEPLOYING_STATUSES = frozenset({"in_progress", "queued", "pending"})
FAILED_STATUSES = frozenset({"failure", "error"})


@dataclass(frozen=True)
class DeploymentObserved:
    """A deployment (status_id 0, no status) or one of its statuses.

    `contains_merge` says whether the deployed sha contains `compared_merge`, one merge commit of
    the ticket (compare API: ahead or identical); None while that is unknown. Events recorded
    before `compared_merge` existed have None there: their answer was for the ticket's merge
    commit of then. Deployments are ordered by their ids, never by when railyard looked, so no
    time belongs to the observation.
    """

    deployment_id: int
    environment: str
    sha: str
    contains_merge: bool | None
    status: str | None
    status_id: int
    compared_merge: str | None = None


@dataclass(frozen=True)
class DeploymentFact:
    """One deployment: what it deployed, its newest status, whether it ever succeeded, and
    which merges it contains (`merges`; `contains_merge`: the answer of older events, which
    named no merge)."""

    deployment_id: int
    environment: str
    sha: str
    contains_merge: bool | None
    status: str | None
    status_id: int
    ever_succeeded: bool
    merges: Mapping[str, bool] = field(default_factory=dict)


def deployment_fact(o: DeploymentObserved) -> DeploymentFact:
    """The fact one deployment observation tells (before it is joined with what was known)."""
    # `inactive` (GitHub's mark on a superseded deployment) is its newest status: not running,
    # not failed; `ever_succeeded` keeps a success it follows (a resync may read only it).
    named = o.compared_merge is not None and o.contains_merge is not None
    return DeploymentFact(
        deployment_id=o.deployment_id,
        environment=o.environment,
        sha=o.sha,
        contains_merge=None if named else o.contains_merge,
        status=o.status,
        status_id=o.status_id,
        ever_succeeded=o.status == "success",
        merges={o.compared_merge: bool(o.contains_merge)} if named and o.compared_merge else {},
    )


def join_deployment(old: DeploymentFact | None, new: DeploymentFact) -> DeploymentFact:
    """Two facts about one deployment: the newest status (by status id), every answer kept."""
    if old is None:
        return new
    rank = (new.status_id, new.status or "") > (old.status_id, old.status or "")
    status = new if rank else old
    known = [d.contains_merge for d in (old, new) if d.contains_merge is not None]
    merges = {**old.merges}
    for merge, contains in new.merges.items():
        merges[merge] = merges.get(merge, False) or contains
    return replace(
        status,
        contains_merge=any(known) if known else None,
        ever_succeeded=old.ever_succeeded or new.ever_succeeded,
        merges=merges,
    )


def contains_all(fact: DeploymentFact, merges: Sequence[str]) -> bool | None:
    """Whether the deployment contains every one of `merges` (None: some answer is unknown)."""
    answers = [fact.merges.get(merge, fact.contains_merge) for merge in merges]
    if any(answer is False for answer in answers):
        return False
    return None if not answers or None in answers else True


def environment_state_of(
    facts: Iterable[DeploymentFact], environment: str, merges: Sequence[str]
) -> DeploymentState:
    """One environment's state for a merged ticket, ordered by deployment id: deployed while the
    latest success contains every merge; else deploying or failed from the newest attempt that
    does; else not deployed."""
    ours = sorted((d for d in facts if d.environment == environment), key=lambda d: d.deployment_id)
    succeeded = [d for d in ours if d.ever_succeeded]
    if succeeded and contains_all(succeeded[-1], merges):
        return DeploymentState.DEPLOYED
    containing = [d for d in ours if contains_all(d, merges)]
    if containing:
        newest = containing[-1].status
        if newest is None or newest in DEPLOYING_STATUSES:
            return DeploymentState.DEPLOYING
        if newest in FAILED_STATUSES:
            return DeploymentState.FAILED
    return DeploymentState.NOT_DEPLOYED


def newest_containing(facts: Iterable[DeploymentFact], merges: Sequence[str]) -> str | None:
    """The sha of the newest deployment known to contain every merge (a compare anchor)."""
    containing = [d for d in facts if merges and contains_all(d, merges)]
    return max(containing, key=lambda d: d.deployment_id).sha if containing else None


@dataclass(frozen=True)
class MergedTicket:
    """A merged ticket, its merge commit, and the deployed commit known to contain it, if any
    (every one of `merge_commits`: each linked PR's that merged, by PR number)."""

    number: int
    merge_commit: str
    anchor: str | None
    merge_commits: tuple[str, ...] = ()


def deployment_changes(
    recorded: Mapping[str, DeploymentState], configured: Mapping[str, DeploymentState]
) -> list[dict[str, Any]]:
    """The `deployment_state_changed` data that bring the recorded environments in line with
    those configured now (`configured`: each one's state, in configuration order).

    The headline is the first environment configured now, not the first the ticket was
    created under: when the recorded environments or their order differ from the
    configuration, the changes carry it (`environments`), and an environment no longer
    configured becomes `not_applicable` and leaves the rails.
    """
    order = list(configured)
    layout = {} if list(recorded) == order else {"environments": order}
    changes = [
        {"environment": env, "from": _value(recorded.get(env)), "to": state.value, **layout}
        for env, state in configured.items()
        if state != recorded.get(env)
    ]
    if layout and not changes:  # nothing moved, but an environment is no longer configured
        gone = DeploymentState.NOT_APPLICABLE.value
        changes = [
            {"environment": env, "from": state.value, "to": gone, **layout}
            for env, state in recorded.items()
            if env not in configured
        ]
    return changes


def deployments_after(
    recorded: Mapping[str, DeploymentState], data: Mapping[str, Any]
) -> dict[str, DeploymentState]:
    """The environments' states after one `deployment_state_changed` (events recorded before
    `environments` existed update one environment, as they did)."""
    deployments = {**recorded, data["environment"]: DeploymentState(data["to"])}
    if "environments" in data:  # the configuration then in force: its environments, its order
        deployments = {
            env: deployments.get(env, DeploymentState.NOT_DEPLOYED) for env in data["environments"]
        }
    return deployments


def _value(state: DeploymentState | None) -> str | None:
    return state.value if state is not None else None
