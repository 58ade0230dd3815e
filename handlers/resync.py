"""`railyard resync OWNER/REPO#N`: read a ticket's PRs, branches and deployments from the API
again and record what changed, for after outages longer than GitHub keeps deliveries.

Everything goes through the same observations as the webhook handlers, so a resync can only
move the repository and deployment rails, and repeats nothing already recorded.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from handlers.errors import Missing
from handlers.observe import (
    Source,
    Told,
    as_of_merge,
    branch_head,
    links_kept,
    merges_in,
    pull_links,
    pull_request_from,
    record,
)
from handlers.payloads import dig_int, dig_str
from handlers.ports import Rules, Services
from handlers.pull_requests import sidebar_links
from policies.model import Ticket, TicketKey
from policies.rails import BranchObserved, DeploymentObserved

RECENT_DEPLOYMENTS = 10


async def resync(services: Services, key: TicketKey) -> list[str]:
    """Re-read the ticket's world from GitHub; return the event types it recorded."""
    async with services.store.read() as reads:
        ticket = await reads.ticket(key)
        stored = await reads.pulls_where(key.repository)
    if ticket is None:
        raise LookupError(f"{key} is not a ticket")
    installation = await services.github.installation_of(key.repository)
    rules = await services.configs.load(installation, key.repository)
    source = Source("railyard resync", f"resync:{key}:{int(services.clock() * 1e9)}")
    told = await _branches(services, ticket, installation)
    numbers = {pull.number for pull, linked in stored if key.number in linked} | set(
        ticket.rails.pull_requests
    )
    now = services.clock()
    links_of = {pull.number: linked for pull, linked in stored}
    seen = {pull.number: pull for pull, _ in stored}
    for number in sorted(numbers):
        answer = await services.github.pull(installation, key.repository, number)
        pull = pull_request_from(answer, key.repository, now)
        if pull is None:
            continue
        if number in seen:  # the author's roles as asked when the PR was seen (resync asks none)
            pull = replace(pull, author_has_role=seen[number].author_has_role)
        # A PR stored before its author's roles were kept, whose links counted then, still counts.
        counts = pull.links_count or (pull.author_has_role is None and bool(links_of.get(number)))
        sidebar = await sidebar_links(services, installation, key.repository, number)
        async with services.store.unit() as uow:
            of_merge = as_of_merge(pull)
            linked, at_merge = await pull_links(
                uow, key.repository, pull, dig_str(answer, "body"), rules, body_as_of_merge=of_merge,
                sidebar=sidebar,
            )  # fmt: skip
            kept = links_kept(pull, linked, at_merge, of_merge, links_of.get(number)) if counts else set()
            await uow.remember(pull, kept)
            await uow.commit()
        if counts:
            observed = pull.observed(key.number in linked, linked_at_merge=key.number in at_merge)
        else:  # an outsider's fork PR only mentions, as on its webhooks (`links_move_rail`)
            observed = pull.observed(False, mention=key.number in linked)
        told.append((key.number, observed))
    async with services.store.unit() as uow:
        await record(uow, services, key.repository, rules, told, source)
        await uow.commit()
    await _deployments(
        services, key, installation, rules, replace(source, operation=source.operation + ":deploy")
    )
    async with services.store.read() as reads:
        history = await reads.history(key)
    return [recorded.event.type.value for recorded in history if recorded.revision > ticket.revision]


async def _branches(services: Services, ticket: Ticket, installation: int) -> list[Told]:
    """The ticket's branches whose head changed since railyard last looked."""
    key = ticket.key
    branches = set(ticket.rails.branches) | {b for b in (ticket.attempt_branch,) if b}
    if ticket.last_delivery and ticket.last_delivery.branch:
        branches.add(ticket.last_delivery.branch)
    now = datetime.fromtimestamp(services.clock(), UTC)
    told: list[Told] = []
    for branch in sorted(branches):
        sha = await branch_head(services, installation, key.repository, branch)
        known = ticket.rails.branches.get(branch)
        if known is None or known.sha != sha:  # record changes only: a look that found the same is not news
            told.append((key.number, BranchObserved(branch, sha, now)))
    return told


async def _deployments(
    services: Services, key: TicketKey, installation: int, rules: Rules, source: Source
) -> None:
    async with services.store.read() as reads:
        merged = {t.number: t for t in await reads.merged_tickets(key.repository)}
    ticket = merged.get(key.number)
    told: list[Told] = []
    held: list[DeploymentObserved] = []
    for environment in rules.environments:
        for item in await services.github.deployments(
            installation, key.repository, environment, RECENT_DEPLOYMENTS
        ):
            deployment_id, sha = dig_int(item, "id"), dig_str(item, "sha")
            if deployment_id is None or sha is None:
                continue
            try:
                newest = (
                    await services.github.latest_status(installation, key.repository, deployment_id) or {}
                )
            except Missing:
                newest = {}
            status_id = dig_int(newest, "id") or 0
            seen = DeploymentObserved(
                deployment_id, environment, sha, None, dig_str(newest, "state"), status_id
            )
            held.append(seen)
            if ticket is not None:
                merges = await merges_in(services, installation, key.repository, ticket, sha)
                told += [
                    (key.number, replace(seen, contains_merge=c, compared_merge=m)) for m, c in merges.items()
                ]
    async with services.store.unit() as uow:
        for seen in held:
            await uow.hold(key.repository, f"deployment:{seen.environment}", seen, services.clock())
        await record(uow, services, key.repository, rules, told, source)
        await uow.commit()
