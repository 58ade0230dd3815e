"""`railyard resync` through the handlers and the in-memory fakes."""

from __future__ import annotations

import pytest

from handlers.resync import resync
from policies.model import TicketKey
from policies.states import DeploymentState, IntegrationState
from tests.fakes.github import pull_answer
from tests.fakes.ports import FakePorts
from tests.fakes.webhooks import INSTALLATION, REPOSITORY, pull_request
from tests.unit.handlers.steps import KEY, published, ticket, world

MERGE, DEPLOYED = "e" * 40, "d" * 40


async def merged_unheard() -> FakePorts:
    """#12 published and PR #40 (`Fixes #12`) opened; then, unheard, #40 merged as MERGE."""
    ports = world()
    ports.github.installations[REPOSITORY] = INSTALLATION
    await published(ports)
    opened = pull_answer(REPOSITORY, 40, body="Fixes #12")
    await ports.dispatch("pull_request", pull_request("opened", opened))
    ports.github.add_pull(
        REPOSITORY,
        pull_answer(
            REPOSITORY, 40, body="Fixes #12", state="closed", merged_at="2026-11-30T10:30:00Z",
            merge_commit=MERGE, updated_at="2026-11-30T10:30:00Z",
        ),
    )  # fmt: skip
    return ports


async def test_resync_records_what_happened_while_railyard_heard_nothing() -> None:
    """After an outage, resync reads the PR and deployments again and records the merge and the deploy."""
    ports = await merged_unheard()
    ports.github.add_deployment(REPOSITORY, 7, "production", DEPLOYED, "success")
    ports.ancestry.pairs.add((MERGE, DEPLOYED))

    recorded = await resync(ports.services, KEY)

    assert "merge_state_changed" in recorded and "deployment_state_changed" in recorded
    rails = ticket(ports).rails
    assert rails.integration is IntegrationState.MERGED
    assert rails.deployments["production"] is DeploymentState.DEPLOYED
    assert await resync(ports.services, KEY) == []  # a second look finds nothing new


async def test_resync_after_a_rollback_shows_the_ticket_not_deployed() -> None:
    """While railyard heard nothing, PR #40 merged, deployment 7 (containing it) succeeded and
    deployment 8 rolled production back, so GitHub marked 7 `inactive` (its newest status, all
    resync reads). Nothing is deploying: the ticket is not deployed (SPEC: a rollback)."""
    ports = await merged_unheard()
    ports.github.add_deployment(REPOSITORY, 7, "production", DEPLOYED, "inactive")
    ports.github.add_deployment(REPOSITORY, 8, "production", "0" * 40, "success")
    ports.ancestry.pairs.add((MERGE, DEPLOYED))

    await resync(ports.services, KEY)

    rails = ticket(ports).rails
    assert rails.integration is IntegrationState.MERGED
    assert rails.deployments["production"] is DeploymentState.NOT_DEPLOYED


async def test_resync_of_an_issue_that_is_no_ticket_is_refused() -> None:
    """Resync of an issue that is not a ticket raises, having asked GitHub nothing."""
    ports = world()
    with pytest.raises(LookupError):
        await resync(ports.services, TicketKey(REPOSITORY, 99))
    assert ports.github.calls == []
