"""Recording what GitHub tells about tickets: observations through the one door, and the reads
the repository rail needs (which tickets a PR links, a branch's head, mergeability, deployments).

These paths can only produce rail events: `UnitOfWork.execute` with an observation runs
`policies.engine.observe`, which cannot touch WorkState or create a delivery record.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import structlog

from handlers.errors import Missing, TransientError
from handlers.payloads import dig, dig_int, dig_str, time_or
from handlers.ports import MergedTicket, Outcome, PullRequest, Reads, Rules, Services, UnitOfWork
from policies.links import MAX_NAMED_TICKETS, capped, linked_issues
from policies.model import TicketKey
from policies.rails import (
    BranchObserved,
    DeploymentObserved,
    MergeabilityObserved,
    Observation,
    ObservationContext,
    PullRequestObserved,
    fingerprint,
)
from policies.refusals import RefusalCode
from policies.watchdog import ticket_number_from_branch

log = structlog.get_logger(__name__)
Told = tuple[int, Observation]
"""An observation about the ticket numbered so."""


@dataclass(frozen=True)
class Source:
    """Who and what brought the observations: the sender and the delivery (or the operation)."""

    actor: str
    operation: str
    installation_id: int | None = None
    actor_id: int | None = None


async def record(
    uow: UnitOfWork, services: Services, repository: str, rules: Rules, told: Iterable[Told], source: Source
) -> list[int]:
    """Record each (ticket number, observation) through the one door; return the tickets with a
    new merge (newly merged, or merged again by another linked PR): their deployments are
    checked next, since what a deployment must contain changed."""
    now = datetime.fromtimestamp(services.clock(), UTC)
    merged: list[int] = []
    for number, observation in told:
        context = ObservationContext(
            actor=source.actor,
            operation_id=f"{source.operation}:{number}:{fingerprint(observation)[:12]}",
            at=now,
            policy_version=rules.policy_version,
            policy=rules.rail_policy,
            actor_id=source.actor_id,
        )
        key = TicketKey(repository, number)
        outcome = await uow.execute(key, observation, context, installation_id=source.installation_id)
        if _not_a_ticket_yet(outcome):
            # The issue may be published later (its /publish still queued): keep what it would
            # have learnt, and try once more in case it was published since, so the held
            # observation is either recorded now or found by the publish (`tell_held`).
            await uow.hold(repository, unborn(number), observation, services.clock(), per_subject=True)
            outcome = await uow.execute(key, observation, context, installation_id=source.installation_id)
        if outcome.applied:
            log.info("rail observed", ticket=number, events=[e.type.value for e in outcome.events])
            if _merges(observation) or any(
                e.type.value == "merge_state_changed" and e.data.get("to") == "merged" for e in outcome.events
            ):
                merged.append(number)
    return merged


def _merges(observation: Observation) -> bool:
    """Whether the observation is a linked PR's merge (one more merge a deployment must contain)."""
    return isinstance(observation, PullRequestObserved) and observation.merged and observation.linked_at_merge


def unborn(number: int) -> str:
    """The held subject of observations about issue `number` from before it was a ticket."""
    return f"ticket:{number}"


def _not_a_ticket_yet(outcome: Outcome) -> bool:
    return outcome.refusal is not None and outcome.refusal.code is RefusalCode.NOT_A_TICKET


async def tell_held(
    uow: UnitOfWork,
    services: Services,
    repository: str,
    rules: Rules,
    number: int,
    installation_id: int | None,
) -> list[int]:
    """A ticket was just published: record what arrived about it before (a PR merged with
    `Fixes #N` while /publish was still queued), so its rails do not depend on that order.
    Returns the tickets that became merged (their deployments are checked next)."""
    told = [(number, seen) for seen in await uow.held_for(repository, unborn(number))]
    if not told:
        return []
    return await record(uow, services, repository, rules, told, Source("railyard", "held", installation_id))


def pull_request_from(payload: object, repository: str, fallback: float) -> PullRequest | None:
    """The PR facts of a `pull_request` payload (or a pulls API answer)."""
    number = dig_int(payload, "number")
    if number is None:
        return None
    merged_at = dig_str(payload, "merged_at")
    return PullRequest(
        repository=repository,
        number=number,
        url=dig_str(payload, "html_url") or "",
        open=dig_str(payload, "state") == "open",
        merged=dig(payload, "merged") is True or bool(merged_at),
        head_ref=dig_str(payload, "head", "ref"),
        head_sha=dig_str(payload, "head", "sha"),
        merge_commit=dig_str(payload, "merge_commit_sha"),
        updated_at=time_or(dig_str(payload, "updated_at"), fallback),
        author=dig_str(payload, "user", "login"),
        head_repository=dig_str(payload, "head", "repo", "full_name"),
        merged_at=time_or(merged_at, fallback) if merged_at else None,
        base_ref=dig_str(payload, "base", "ref"),
        repository_id=dig_int(payload, "base", "repo", "id"),
        head_repository_id=dig_int(payload, "head", "repo", "id"),
    )


async def pull_links(
    reads: Reads,
    repository: str,
    pull: PullRequest,
    body: str | None,
    rules: Rules,
    *,
    body_as_of_merge: bool,
    sidebar: set[int] | None = None,
) -> tuple[set[int], set[int]]:
    """(the tickets the PR links now, the tickets it linked when it merged; empty unless merged).

    The body counts for the merge only when it is the body of the merge (`body_as_of_merge`:
    the `closed` event, or an answer not updated since `merged_at`); a branch counts only
    when its head is in this repository and it was reported by `merged_at`. `sidebar`: the
    issues GitHub says the PR closes (the Development sidebar's links), which count exactly
    like `Fixes #N` in the body.
    """
    by_body = named_tickets(body, repository, sidebar, pull.number)
    linked, at_merge = set(by_body), by_body if pull.merged and body_as_of_merge else set()
    if pull.head_ref and pull.head_in_repository:
        ref = pull.head_ref
        linked |= await reads.tickets_on_branch(repository, ref, head_in_repository=True)
        linked |= await by_pattern(reads, repository, ref, rules)
        if pull.merged:
            merged_at = pull.merged_at or pull.updated_at
            at_merge |= await reads.tickets_on_branch(
                repository, ref, head_in_repository=True, reported_by=merged_at
            )
            at_merge |= await by_pattern(reads, repository, ref, rules, claimed_by=merged_at)
    return linked, at_merge


def links_kept(
    pull: PullRequest, linked: set[int], at_merge: set[int], body_as_of_merge: bool, stored: set[int] | None
) -> set[int]:
    """What the PR's row keeps as its links (what the deployment gate reads). Open: what it links
    now. Merged: what it linked when it merged, from an event whose body is the merge's; else
    the links stored before (an edit processed before its `closed`, a resync after an outage),
    else, for a PR never seen open, the links now. Once stored merged, `remember` keeps them."""
    if not pull.merged:
        return linked
    if body_as_of_merge:
        return at_merge
    return stored if stored is not None else linked


def named_tickets(body: str | None, repository: str, sidebar: set[int] | None, number: int) -> set[int]:
    """The tickets PR `number` names by its body's keywords and its Development sidebar, at most
    `MAX_NAMED_TICKETS` of them (the lowest numbers); the ignored rest is logged."""
    kept, ignored = capped(set(linked_issues(body, repository)) | (sidebar or set()))
    if ignored:
        log.warning(
            "pull request names too many tickets",
            pull_request=number,
            limit=MAX_NAMED_TICKETS,
            ignored=sorted(ignored)[:20],
            ignored_count=len(ignored),
        )
    return set(kept)


def as_of_merge(pull: PullRequest, action: str | None = None) -> bool:
    """Whether a PR answer's body is the body it merged with: the merge event's own payload, or
    an answer last updated at (or before) the merge; an edit after the merge is neither."""
    if not pull.merged:
        return False
    return action == "closed" or (pull.merged_at is not None and pull.updated_at <= pull.merged_at)


async def by_pattern(
    reads: Reads, repository: str, branch: str, rules: Rules, *, claimed_by: datetime | None = None
) -> set[int]:
    """The ticket `tickets.branch_pattern` names for `branch` (`agent/{number}-*`), if it has a
    claimant: a claimed ticket's branches are found without `branch=NAME`. With `claimed_by`,
    only if an attempt was opened by then (the links a PR had when it merged).

    `branch` must be a branch of `repository`: callers never pass a fork's branch."""
    number = ticket_number_from_branch(rules.branch_pattern, branch)
    if number is None:
        return set()
    ticket = await reads.ticket(TicketKey(repository, number))
    claimed = ticket is not None and ticket.claimant is not None and not ticket.no_code
    if claimed and claimed_by is not None:
        claimed = await reads.attempt_opened_by(repository, number, claimed_by)
    return {number} if claimed else set()


async def branch_head(services: Services, installation_id: int, repository: str, branch: str) -> str | None:
    """The branch's head as the API reports it now; None when the branch does not exist."""
    try:
        found = await services.github.branch(installation_id, repository, branch)
    except Missing:
        return None
    return dig_str(found, "commit", "sha")


async def mergeability(
    services: Services, installation_id: int | None, repository: str, number: int, at: datetime
) -> MergeabilityObserved | None:
    """Ask the PR API whether the PR's current head can merge into its current base (None while
    GitHub is still computing); the answer names both, as GitHub reported them."""
    if installation_id is None:
        return None
    try:
        answer = await services.github.pull(installation_id, repository, number)
    except Missing:
        return None
    mergeable, head = dig(answer, "mergeable"), dig_str(answer, "head", "sha")
    if not isinstance(mergeable, bool) or head is None:
        return None
    return MergeabilityObserved(number, head, mergeable, at, dig_str(answer, "base", "ref"))


REREAD_WINDOW = timedelta(minutes=5)
"""How long after a push a PR whose mergeability GitHub is still computing is read again."""
RETRY_SECONDS = 2.0
"""The earliest retry of a delivery that found mergeability still being computed."""


def reread_later(computing: list[int], since: datetime, now: float) -> None:
    """GitHub answered `mergeable: null` (still computing) for the PRs `computing`: the worker
    retries the delivery (`TransientError`, the queue's backoff) until `REREAD_WINDOW` after
    `since` (the push); past it they are left to the next push, logged."""
    if computing and datetime.fromtimestamp(now, UTC) - since < REREAD_WINDOW:
        raise TransientError(f"GitHub is still computing whether PRs {computing} merge", now + RETRY_SECONDS)
    if computing:
        log.info("mergeability unknown after a push; left to the next push", pulls=computing)


async def deployment_rechecks(
    services: Services, installation_id: int, repository: str, rules: Rules, number: int
) -> list[Told]:
    """A ticket just merged (or merged again, by another PR): every held deployment of each
    environment, as seen by it, once per merge of the ticket (SPEC: the latest of each
    environment; replaying all keeps the recorded set independent of order). An answer the
    ticket holds already costs no compare."""
    async with services.store.read() as reads:
        ticket = await reads.ticket(TicketKey(repository, number))
        if ticket is None or ticket.rails.merge_commit is None:
            return []
        held = {env: await reads.held_for(repository, f"deployment:{env}") for env in rules.environments}
    rails, told = ticket.rails, list[Told]()
    for environment in rules.environments:
        for seen in held[environment]:
            assert isinstance(seen, DeploymentObserved)
            fact = rails.deployment_facts.get(seen.deployment_id)
            for merge in rails.merge_commits:
                contains = fact.merges.get(merge) if fact else None
                if contains is None:
                    contains = await services.ancestry.contains(installation_id, repository, merge, seen.sha)
                told.append((number, replace(seen, contains_merge=contains, compared_merge=merge)))
    return told


async def merges_in(
    services: Services, installation_id: int, repository: str, ticket: MergedTicket, deployed: str
) -> dict[str, bool]:
    """Which of the ticket's merges `deployed` contains: all of them, for one compare, when it
    contains the ticket's anchor (a deployment known to contain them all); else each asked."""
    merges = ticket.merge_commits or (ticket.merge_commit,)
    ancestry = services.ancestry
    if ticket.anchor is not None and await ancestry.contains(
        installation_id, repository, ticket.anchor, deployed
    ):
        return dict.fromkeys(merges, True)
    return {merge: await ancestry.contains(installation_id, repository, merge, deployed) for merge in merges}


async def recheck_merged(
    services: Services, repository: str, rules: Rules, merged: Iterable[int], source: Source
) -> None:
    """Check each newly merged ticket against the deployments railyard has seen: a unit of its own,
    after the merge is committed, because the compare calls in between go to GitHub."""
    if source.installation_id is None:
        return
    for number in merged:
        told = await deployment_rechecks(services, source.installation_id, repository, rules, number)
        if not told:
            continue
        async with services.store.unit() as uow:
            await record(uow, services, repository, rules, told, source)
            await uow.commit()


async def merged_now(uow: UnitOfWork, key: TicketKey) -> list[int]:
    """The ticket's number when the record holds it merged (its deployments may be checked)."""
    ticket = await uow.ticket(key)
    return [key.number] if ticket is not None and ticket.rails.merge_commit is not None else []


async def delivered_branch(
    uow: UnitOfWork, services: Services, repository: str, rules: Rules, number: int, branch: str,
    sha: str | None, operation: str,
) -> list[int]:  # fmt: skip
    """A delivery reported `branch`: record it on the ticket, and link the PRs opened from it;
    the ticket, when a PR merged from it by then merges it (its deployments are checked next)."""
    now = datetime.fromtimestamp(services.clock(), UTC)
    told: list[Told] = [(number, BranchObserved(branch, sha, now))]
    for pull, linked in await uow.pulls_where(repository, head_ref=branch):
        await uow.remember(pull, linked | {number})
        # A PR that already merged counts for the ticket only if the branch was reported by then.
        at_merge = pull.merged and number in await uow.tickets_on_branch(
            repository,
            branch,
            head_in_repository=pull.head_in_repository,
            reported_by=pull.merged_at or pull.updated_at,
        )
        told.append((number, pull.observed(True, linked_at_merge=at_merge)))
    return await record(uow, services, repository, rules, told, Source("railyard", operation))
