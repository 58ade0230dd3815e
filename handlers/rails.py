"""The repository rail from pull-request, push and check events.

Each handler turns an event (and, where SPEC asks, what the API says now) into observations
about the tickets it concerns, and records them through the one door. These paths can
only produce rail events: `TicketService.execute` with an observation runs
`policies.engine.observe`, which cannot touch WorkState or create a delivery record.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime

import structlog

from app.bootstrap import Services
from app.github.ancestry import merged_with_anchors
from app.github.client import GitHubError
from app.github.config import LoadedConfig
from app.runtime.watchdog import push_signs, record_sign_of_life
from app.store.held import held_for, hold
from app.store.pulls import (
    PullRequest,
    attempt_opened_by,
    pulls_where,
    remember,
    stored_pull,
    tickets_on_branch,
)
from app.store.tickets import Outcome
from app.views.surfaces import check_run, show
from app.web.payloads import dig, dig_int, dig_str
from handlers.routing import Router, WebhookEvent
from policies.links import linked_issues
from policies.model import TicketKey
from policies.rails import (
    BranchObserved,
    CheckObserved,
    DeploymentObserved,
    MergeabilityObserved,
    Observation,
    ObservationContext,
    fingerprint,
)
from policies.refusals import RefusalCode
from policies.watchdog import ticket_number_from_branch

router = Router()
log = structlog.get_logger(__name__)


def _time(text: str | None, fallback: float) -> datetime:
    if text:
        try:
            return datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            pass
    return datetime.fromtimestamp(fallback, UTC)


async def _config(event: WebhookEvent, services: Services) -> tuple[str, LoadedConfig] | None:
    repository = dig_str(event.payload, "repository", "full_name")
    if repository is None or event.installation_id is None or services.configs is None:
        return None
    return repository, await services.configs.load(event.installation_id, repository)


def record(
    services: Services,
    event: WebhookEvent,
    repository: str,
    loaded: LoadedConfig,
    observations: Iterable[tuple[int, Observation]],
) -> list[int]:
    """Record each (ticket number, observation) a webhook delivery brought; return the newly merged."""
    actor = dig_str(event.payload, "sender", "login") or "github"
    return record_as(
        services,
        repository,
        loaded,
        observations,
        actor=actor,
        actor_id=dig_int(event.payload, "sender", "id"),
        operation=event.delivery_id,
        installation_id=event.installation_id,
    )


def record_as(
    services: Services,
    repository: str,
    loaded: LoadedConfig,
    observations: Iterable[tuple[int, Observation]],
    *,
    actor: str,
    operation: str,
    installation_id: int | None = None,
    actor_id: int | None = None,
) -> list[int]:
    """Record each (ticket number, observation) through the one door; return the newly merged tickets."""
    now = datetime.fromtimestamp(services.clock(), UTC)
    merged: list[int] = []
    for number, observation in observations:
        context = ObservationContext(
            actor=actor,
            operation_id=f"{operation}:{number}:{fingerprint(observation)[:12]}",
            at=now,
            policy_version=loaded.policy_version,
            policy=loaded.config.to_rail_policy(),
            actor_id=actor_id,
        )
        key = TicketKey(repository, number)
        outcome = services.tickets.execute(key, observation, context, installation_id=installation_id)
        if _not_a_ticket_yet(outcome):
            # The issue may be published later (its /publish still queued): keep what it would
            # have learnt, and try once more in case it was published since, so the held
            # observation is either recorded now or found by the publish (`tell_held`).
            hold(
                services.database,
                repository,
                _unborn(number),
                observation,
                services.clock(),
                per_subject=True,
            )
            outcome = services.tickets.execute(key, observation, context, installation_id=installation_id)
        if outcome.applied:
            log.info("rail observed", ticket=number, events=[e.type.value for e in outcome.events])
            if any(
                e.type.value == "merge_state_changed" and e.data.get("to") == "merged" for e in outcome.events
            ):
                merged.append(number)
    return merged


def _unborn(number: int) -> str:
    """The held subject of observations about issue `number` from before it was a ticket."""
    return f"ticket:{number}"


def _not_a_ticket_yet(outcome: Outcome) -> bool:
    return outcome.refusal is not None and outcome.refusal.code is RefusalCode.NOT_A_TICKET


async def tell_held(
    services: Services, repository: str, loaded: LoadedConfig, number: int, installation_id: int | None
) -> None:
    """A ticket was just published: record what arrived about it before (a PR merged with
    `Fixes #N` while /publish was still queued), so its rails do not depend on that order."""
    observations = [(number, seen) for seen in held_for(services.database, repository, _unborn(number))]
    if not observations:
        return
    merged = record_as(
        services, repository, loaded, observations, actor="railyard", operation="held",
        installation_id=installation_id,
    )  # fmt: skip
    if merged and installation_id is not None:
        rechecks = await deployment_rechecks(services, installation_id, repository, loaded, number)
        record_as(
            services, repository, loaded, rechecks, actor="railyard", operation="held",
            installation_id=installation_id,
        )  # fmt: skip


def pull_request_from(payload: object, repository: str, fallback: float) -> PullRequest | None:
    """The PR facts of a `pull_request` payload (or a pulls API answer)."""
    number = dig_int(payload, "number")
    if number is None:
        return None
    return PullRequest(
        repository=repository,
        number=number,
        url=dig_str(payload, "html_url") or "",
        open=dig_str(payload, "state") == "open",
        merged=dig(payload, "merged") is True or bool(dig_str(payload, "merged_at")),
        head_ref=dig_str(payload, "head", "ref"),
        head_sha=dig_str(payload, "head", "sha"),
        merge_commit=dig_str(payload, "merge_commit_sha"),
        updated_at=_time(dig_str(payload, "updated_at"), fallback),
        author=dig_str(payload, "user", "login"),
        head_repository=dig_str(payload, "head", "repo", "full_name"),
        merged_at=_time(merged_at, fallback) if (merged_at := dig_str(payload, "merged_at")) else None,
    )


def pull_links(
    services: Services,
    repository: str,
    pull: PullRequest,
    body: str | None,
    loaded: LoadedConfig,
    *,
    body_as_of_merge: bool,
) -> tuple[set[int], set[int]]:
    """(the tickets the PR links now, the tickets it linked when it merged; empty unless merged).

    The body counts for the merge only when it is the body of the merge (`body_as_of_merge`:
    the `closed` event, or an answer not updated since `merged_at`); a branch counts only
    when its head is in this repository and it was reported by `merged_at`.
    """
    by_body = set(linked_issues(body, repository))
    linked, at_merge = set(by_body), by_body if pull.merged and body_as_of_merge else set()
    if pull.head_ref and pull.head_in_repository:
        ref, head = pull.head_ref, pull.head_repository
        linked |= tickets_on_branch(services.database, repository, ref, head_repository=head)
        linked |= by_pattern(services, repository, ref, loaded)
        if pull.merged:
            merged_at = pull.merged_at or pull.updated_at
            at_merge |= tickets_on_branch(
                services.database, repository, ref, head_repository=head, reported_by=merged_at
            )
            at_merge |= by_pattern(services, repository, ref, loaded, claimed_by=merged_at)
    return linked, at_merge


def pull_observations(
    pull: PullRequest, linked: set[int], at_merge: set[int], before: set[int], newer: PullRequest | None
) -> list[tuple[int, Observation]]:
    """What one PR event tells each ticket; `before` are the tickets the stored PR links.

    A current event also tells the tickets it no longer links. An older event arriving late
    (`newer` is stored) speaks only for the tickets it links, and a ticket it is the first to
    link also learns the newer state, so the final rails do not depend on arrival order.
    """
    if newer is None:
        return [
            (n, pull.observed(n in linked, linked_at_merge=n in at_merge))
            for n in sorted(linked | before | at_merge)
        ]
    told = linked | at_merge
    observations: list[tuple[int, Observation]] = [
        (n, pull.observed(n in linked, linked_at_merge=n in at_merge)) for n in sorted(told)
    ]
    return observations + [(n, newer.observed(False)) for n in sorted(told - before)]


def as_of_merge(pull: PullRequest, action: str | None = None) -> bool:
    """Whether a PR answer's body is the body it merged with: the merge event's own payload, or
    an answer last updated at (or before) the merge; an edit after the merge is neither."""
    if not pull.merged:
        return False
    return action == "closed" or (pull.merged_at is not None and pull.updated_at <= pull.merged_at)


@router.register("pull_request")
async def on_pull_request(event: WebhookEvent, services: Services) -> None:
    """Link and unlink tickets; record the PR's state on each ticket it links or linked."""
    found = await _config(event, services)
    if found is None:
        return
    repository, loaded = found
    pull = pull_request_from(dig(event.payload, "pull_request"), repository, services.clock())
    if pull is None:
        return
    body = dig_str(event.payload, "pull_request", "body")
    linked, at_merge = pull_links(
        services, repository, pull, body, loaded, body_as_of_merge=as_of_merge(pull, event.action)
    )
    stored = stored_pull(services.database, repository, pull.number)
    before = remember(services.database, pull, linked)
    if pull.open and pull.head_sha and event.installation_id is not None:
        # Every open PR gets the check on its head, linked or not (`checks.unlinked`).
        show(services, check_run(event.installation_id, repository, pull.number, pull.head_sha))
    newer = stored[0] if stored and stored[0].updated_at > pull.updated_at else None
    observations = pull_observations(pull, linked, at_merge, before, newer)
    if pull.head_sha and linked:  # checks that completed before this PR showed its head
        held_checks = held_for(services.database, repository, f"check:{pull.head_sha}")
        observations += [(n, check) for check in held_checks for n in sorted(linked)]
    if pull.open and linked and event.action in ("opened", "reopened", "synchronize", "ready_for_review"):
        answer = await poll_mergeability(
            services, event.installation_id, repository, pull.number, pull.updated_at
        )
        observations += [(n, answer) for n in sorted(linked) if answer is not None]
    for number in record(services, event, repository, loaded, observations):
        # SPEC: when a ticket becomes merged, each environment's latest deployment is checked again.
        await recheck_deployments(services, event, repository, loaded, number)


def _check(event: WebhookEvent, kind: str, fallback: float) -> CheckObserved | None:
    item = dig(event.payload, kind)
    head_sha, check_id = dig_str(item, "head_sha"), dig_int(item, "id")
    name = (
        dig_str(item, "name")
        if kind == "check_run"
        else dig_str(item, "app", "slug") or dig_str(item, "app", "name")
    )
    if head_sha is None or check_id is None or name is None:
        return None
    completed = dig_str(item, "status") == "completed"
    at = dig_str(item, "completed_at") or dig_str(item, "updated_at") or dig_str(item, "started_at")
    conclusion = dig_str(item, "conclusion") if completed else None
    return CheckObserved(head_sha, name, conclusion, check_id, _time(at, fallback))


@router.register("check_run")
@router.register("check_suite")
async def on_check(event: WebhookEvent, services: Services) -> None:
    """A check on a commit: it can block (or unblock) the PRs whose head that commit is."""
    found = await _config(event, services)
    if found is None:
        return
    repository, loaded = found
    observation = _check(event, event.event, services.clock())
    if observation is None:
        return
    hold(services.database, repository, f"check:{observation.head_sha}", observation, services.clock())
    tickets: set[int] = set()
    for _, linked in pulls_where(services.database, repository, head_sha=observation.head_sha):
        tickets |= linked
    record(services, event, repository, loaded, [(n, observation) for n in sorted(tickets)])


@router.register("push")
async def on_push(event: WebhookEvent, services: Services) -> None:
    """A push to a branch a ticket's claim or delivery reported: verify it and record what is there."""
    ref = dig_str(event.payload, "ref") or ""
    default = dig_str(event.payload, "repository", "default_branch")
    repository_name = dig_str(event.payload, "repository", "full_name")
    if default and repository_name and ref == f"refs/heads/{default}" and services.configs is not None:
        services.configs.forget(repository_name)  # `.github/railyard.yml` may have changed
    found = await _config(event, services)
    if found is None or not ref.startswith("refs/heads/") or services.github is None:
        return
    repository, loaded = found
    branch = ref.removeprefix("refs/heads/")
    if event.installation_id is None:
        return
    observations: list[tuple[int, Observation]] = []
    pushed_at = _push_time(event, services.clock())
    # A push names a branch of the repository it was pushed to, never a fork's.
    tickets = tickets_on_branch(services.database, repository, branch, head_repository=repository)
    tickets |= by_pattern(services, repository, branch, loaded)
    for heard in push_signs(
        services.tickets, repository, branch, tickets, loaded, pushed_at, event.delivery_id
    ):
        record_sign_of_life(services.database, heard)
    if tickets:
        sha = await verified_branch_head(services, event.installation_id, repository, branch)
        observed = BranchObserved(branch, sha, pushed_at)
        observations += [(n, observed) for n in sorted(tickets)]
    for pull, linked in pulls_where(services.database, repository, head_ref=branch):
        if pull.open and linked:  # a push to a PR's head: is it still mergeable?
            answer = await poll_mergeability(
                services, event.installation_id, repository, pull.number, pushed_at
            )
            observations += [(n, answer) for n in sorted(linked) if answer is not None]
    record(services, event, repository, loaded, observations)


def by_pattern(
    services: Services,
    repository: str,
    branch: str,
    loaded: LoadedConfig,
    *,
    claimed_by: datetime | None = None,
) -> set[int]:
    """The ticket `tickets.branch_pattern` names for `branch` (`agent/{number}-*`), if it has a
    claimant: a claimed ticket's branches are found without `branch=NAME`. With `claimed_by`,
    only if an attempt was opened by then (the links a PR had when it merged).

    `branch` must be a branch of `repository`: callers never pass a fork's branch."""
    number = ticket_number_from_branch(loaded.config.tickets.branch_pattern, branch)
    if number is None:
        return set()
    ticket = services.tickets.load(TicketKey(repository, number))
    claimed = ticket is not None and ticket.claimant is not None and not ticket.no_code
    if claimed and claimed_by is not None:
        claimed = attempt_opened_by(services.database, repository, number, claimed_by)
    return {number} if claimed else set()


async def verified_branch_head(
    services: Services, installation_id: int, repository: str, branch: str
) -> str | None:
    """The branch's head as the API reports it now; None when the branch does not exist."""
    assert services.github is not None
    try:
        found = await services.github.call(
            "get_branch", installation_id, repository=repository, branch=branch
        )
    except GitHubError as error:
        if error.status == 404:
            return None
        raise
    return dig_str(found, "commit", "sha")


def report_delivered_branch(
    services: Services,
    repository: str,
    loaded: LoadedConfig,
    number: int,
    branch: str,
    sha: str | None,
    operation: str,
) -> None:
    """A delivery reported `branch`: record it on the ticket, and link the PRs opened from it."""
    now = datetime.fromtimestamp(services.clock(), UTC)
    observations: list[tuple[int, Observation]] = [(number, BranchObserved(branch, sha, now))]
    for pull, linked in pulls_where(services.database, repository, head_ref=branch):
        remember(services.database, pull, linked | {number})
        # A PR that already merged counts for the ticket only if the branch was reported by then.
        at_merge = pull.merged and number in tickets_on_branch(
            services.database, repository, branch, head_repository=pull.head_repository,
            reported_by=pull.merged_at or pull.updated_at,
        )  # fmt: skip
        observations.append((number, pull.observed(True, linked_at_merge=at_merge)))
    record_as(services, repository, loaded, observations, actor="railyard", operation=operation)


async def recheck_deployments(
    services: Services, event: WebhookEvent, repository: str, loaded: LoadedConfig, number: int
) -> None:
    """A ticket just merged: check it against every deployment railyard has seen (SPEC: the
    latest of each environment; replaying all keeps the recorded set independent of order)."""
    if event.installation_id is None:
        return
    observations = await deployment_rechecks(services, event.installation_id, repository, loaded, number)
    record(services, event, repository, loaded, observations)


async def deployment_rechecks(
    services: Services, installation_id: int, repository: str, loaded: LoadedConfig, number: int
) -> list[tuple[int, Observation]]:
    """Every held deployment of each environment, as seen by the merged ticket `number`."""
    ticket = services.tickets.load(TicketKey(repository, number))
    merge = ticket.rails.merge_commit if ticket else None
    if merge is None or services.ancestry is None:
        return []
    observations: list[tuple[int, Observation]] = []
    for environment in loaded.config.deployments.environments:
        for seen in held_for(services.database, repository, f"deployment:{environment}"):
            assert isinstance(seen, DeploymentObserved)
            contains = await services.ancestry.contains(installation_id, repository, merge, seen.sha)
            observations.append((number, replace(seen, contains_merge=contains)))
    return observations


@router.register("deployment", "created")
@router.register("deployment_status", "created")
async def on_deployment(event: WebhookEvent, services: Services) -> None:
    """One deployment (or status) moves every merged ticket it contains, not only its last commit's."""
    found = await _config(event, services)
    deployment_id = dig_int(event.payload, "deployment", "id")
    sha = dig_str(event.payload, "deployment", "sha")
    environment = dig_str(event.payload, "deployment", "environment")
    if found is None or deployment_id is None or sha is None or environment is None:
        return
    repository, loaded = found
    status_id = dig_int(event.payload, "deployment_status", "id") or 0
    status = dig_str(event.payload, "deployment_status", "state") if status_id else None
    seen = DeploymentObserved(deployment_id, environment, sha, None, status, status_id)
    hold(services.database, repository, f"deployment:{environment}", seen, services.clock())
    if services.ancestry is None or event.installation_id is None:
        return
    observations: list[tuple[int, Observation]] = []
    for ticket in merged_with_anchors(services.database, repository):
        contains = await services.ancestry.contains_ticket(event.installation_id, repository, ticket, sha)
        observations.append((ticket.number, replace(seen, contains_merge=contains)))
    record(services, event, repository, loaded, observations)


def _push_time(event: WebhookEvent, fallback: float) -> datetime:
    """When the push happened, by GitHub's payload (so a redelivery is the same observation)."""
    pushed = dig(event.payload, "repository", "pushed_at")
    if isinstance(pushed, int | float) and not isinstance(pushed, bool):
        return datetime.fromtimestamp(pushed, UTC)
    return _time(dig_str(event.payload, "head_commit", "timestamp"), fallback)


async def poll_mergeability(
    services: Services, installation_id: int | None, repository: str, number: int, at: datetime
) -> MergeabilityObserved | None:
    """Ask the PR API whether the PR's current head can merge (None while GitHub is still computing)."""
    if services.github is None or installation_id is None:
        return None
    try:
        answer = await services.github.call("get_pull", installation_id, repository=repository, number=number)
    except GitHubError as error:
        if error.status == 404:
            return None
        raise
    mergeable, head = dig(answer, "mergeable"), dig_str(answer, "head", "sha")
    if not isinstance(mergeable, bool) or head is None:
        return None
    return MergeabilityObserved(number, head, mergeable, at)
