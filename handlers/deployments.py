"""`deployment` and `deployment_status` events: one deployment (or status) moves every merged
ticket it contains, not only its last commit's.

Only the environments `deployments.environments` lists are rails (SPEC: kept per configured
environment). A deployment to another one (a per-PR preview) is held, for the deployment gate
and for a ticket merging once the environment is configured, and touches no ticket: no
revision, no status comment or check rewritten, no compare spent.
"""

from __future__ import annotations

from dataclasses import replace

from handlers.observe import Told, merges_in, record
from handlers.payloads import dig_int, dig_str
from handlers.ports import Services
from handlers.pull_requests import source_of
from handlers.routing import Router, WebhookEvent
from policies.rails import DeploymentObserved

router = Router()


def deployment_from(event: WebhookEvent) -> DeploymentObserved | None:
    """The deployment (and its status, for `deployment_status`) a payload reports."""
    deployment_id = dig_int(event.payload, "deployment", "id")
    sha = dig_str(event.payload, "deployment", "sha")
    environment = dig_str(event.payload, "deployment", "environment")
    if deployment_id is None or sha is None or environment is None:
        return None
    status_id = dig_int(event.payload, "deployment_status", "id") or 0
    status = dig_str(event.payload, "deployment_status", "state") if status_id else None
    return DeploymentObserved(deployment_id, environment, sha, None, status, status_id)


@router.register("deployment", "created")
@router.register("deployment_status", "created")
async def on_deployment(event: WebhookEvent, services: Services) -> None:
    """Hold the deployment for tickets that merge later; record it on every merged ticket it contains."""
    repository = dig_str(event.payload, "repository", "full_name")
    seen = deployment_from(event)
    if repository is None or event.installation_id is None or seen is None:
        return
    rules = await services.configs.load(event.installation_id, repository)
    async with services.store.unit() as uow:
        # Held first, and committed: a ticket merging at the same time either finds it or is found here.
        await uow.hold(repository, f"deployment:{seen.environment}", seen, services.clock())
        await uow.commit()
    if seen.environment not in rules.environments:
        return
    async with services.store.read() as reads:
        merged = await reads.merged_tickets(repository)
    told: list[Told] = []
    for ticket in merged:  # an answer for each merge of the ticket: it is deployed when all are in
        merges = await merges_in(services, event.installation_id, repository, ticket, seen.sha)
        told += [
            (ticket.number, replace(seen, contains_merge=c, compared_merge=m)) for m, c in merges.items()
        ]
    async with services.store.unit() as uow:
        await record(uow, services, repository, rules, told, source_of(event))
        await uow.commit()
