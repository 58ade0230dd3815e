"""`railyard resync OWNER/REPO#N`: read a ticket's PRs, branches and deployments from the API
again and record what changed, for after outages longer than GitHub keeps deliveries.

Everything goes through the same observations as the webhook handlers, so a resync can only
move the repository and deployment rails, and repeats nothing already recorded.
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime

from app.bootstrap import Services
from app.github.ancestry import merged_tickets
from app.github.config import LoadedConfig
from app.store.held import hold
from app.store.pulls import pulls_where, remember
from app.web.payloads import dig_int, dig_str
from handlers.rails import as_of_merge, pull_links, pull_request_from, record_as, verified_branch_head
from policies.model import TicketKey
from policies.rails import BranchObserved, DeploymentObserved, Observation

RECENT_DEPLOYMENTS = 10


async def resync(services: Services, key: TicketKey) -> list[str]:
    """Re-read the ticket's world from GitHub; return the event types it recorded."""
    assert services.github is not None and services.configs is not None
    ticket = services.tickets.load(key)
    if ticket is None:
        raise LookupError(f"{key} is not a ticket")
    found = await services.github.call("get_repository_installation", None, repository=key.repository)
    installation = int(found["id"])
    loaded = await services.configs.load(installation, key.repository)
    operation = f"resync:{key}:{time.time_ns()}"
    before = services.tickets.load(key)
    observations: list[tuple[int, Observation]] = []

    branches = set(ticket.rails.branches) | {b for b in (ticket.attempt_branch,) if b}
    if ticket.last_delivery and ticket.last_delivery.branch:
        branches.add(ticket.last_delivery.branch)
    now = services.clock()
    for branch in sorted(branches):
        sha = await verified_branch_head(services, installation, key.repository, branch)
        known = ticket.rails.branches.get(branch)
        if known is None or known.sha != sha:  # record changes only: a look that found the same is not news
            observations.append((key.number, BranchObserved(branch, sha, datetime.fromtimestamp(now, UTC))))

    numbers = {
        pull.number for pull, linked in pulls_where(services.database, key.repository) if key.number in linked
    }
    numbers |= set(ticket.rails.pull_requests)
    for number in sorted(numbers):
        answer = await services.github.call(
            "get_pull", installation, repository=key.repository, number=number
        )
        pull = pull_request_from(answer, key.repository, now)
        if pull is None:
            continue
        linked, at_merge = pull_links(
            services, key.repository, pull, dig_str(answer, "body"), loaded,
            body_as_of_merge=as_of_merge(pull),
        )  # fmt: skip
        remember(services.database, pull, linked)
        observed = pull.observed(key.number in linked, linked_at_merge=key.number in at_merge)
        observations.append((key.number, observed))
    record_as(services, key.repository, loaded, observations, actor="railyard resync", operation=operation)

    await _resync_deployments(services, key, installation, loaded, operation)
    after = services.tickets.load(key)
    history = services.tickets.history(key)
    added = after.revision - before.revision if after and before else 0
    return [recorded.event.type.value for recorded in history[len(history) - added :]] if added else []


async def _resync_deployments(
    services: Services, key: TicketKey, installation: int, loaded: LoadedConfig, operation: str
) -> None:
    assert services.github is not None and services.ancestry is not None
    merge = dict(merged_tickets(services.database, key.repository)).get(key.number)
    observations: list[tuple[int, Observation]] = []
    for environment in loaded.config.deployments.environments:
        listed = await services.github.call(
            "list_deployments",
            installation,
            repository=key.repository,
            params={"environment": environment, "per_page": RECENT_DEPLOYMENTS},
        )
        for item in listed if isinstance(listed, list) else []:
            deployment_id, sha = dig_int(item, "id"), dig_str(item, "sha")
            if deployment_id is None or sha is None:
                continue
            statuses = await services.github.call(
                "list_deployment_statuses",
                installation,
                repository=key.repository,
                deployment_id=deployment_id,
                params={"per_page": 1},
            )
            newest = statuses[0] if isinstance(statuses, list) and statuses else {}
            status_id = dig_int(newest, "id") or 0
            seen = DeploymentObserved(
                deployment_id, environment, sha, None, dig_str(newest, "state"), status_id
            )
            hold(services.database, key.repository, f"deployment:{environment}", seen, services.clock())
            if merge is not None:
                contains = await services.ancestry.contains(installation, key.repository, merge, sha)
                observations.append((key.number, replace(seen, contains_merge=contains)))
    record_as(
        services,
        key.repository,
        loaded,
        observations,
        actor="railyard resync",
        operation=operation + ":deploy",
    )
