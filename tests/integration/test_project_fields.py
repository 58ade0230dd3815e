"""The project-fields effect through the outbox, on SQLite and PostgreSQL, against the GitHub
stand-in: one coalesced effect per ticket, the item's fields set, and what the project lacks
kept with the effect and said on the status comment."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from sqlalchemy import select

from app.bootstrap import Shell, wire
from app.github.client import GitHubClient
from app.github.config import CONFIG_PATH
from app.runtime.metrics import Metrics
from app.runtime.outbox import Outbox
from app.store.database import Database
from app.store.effects import effect_counts, effects_table
from app.views.project_text import every_option
from github_standin import StandinState, running_standin
from github_standin.projects import Project
from policies.commands import Claim, Context, Draft, Publish
from policies.model import Actor, TicketKey
from policies.projects import ProjectRail
from policies.states import Role
from support.world import CONFIG, REPO, standin_state
from tests.fakes import StillClock, app_settings

KEY = TicketKey(REPO, 12)
T0 = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
PROJECTS = "projects: [{owner: acme, number: 5, add_items: true, fields: {repository: Code}}]\n"


@dataclass
class Rig:
    services: Shell
    outbox: Outbox
    clock: StillClock
    github: StandinState
    project: Project


@pytest.fixture
async def rig(database: Database) -> AsyncIterator[Rig]:
    """acme's project 5 lacks the Work option `claimed`; the outbox is the one bootstrap builds."""
    state = standin_state()
    state.repositories[REPO].files[CONFIG_PATH] = CONFIG + PROJECTS
    state.installations[7].permissions["organization_projects"] = "write"
    deployment = every_option(ProjectRail.DEPLOYMENT)
    fields = {"Work": ["draft", "open"], "Code": ["nothing reported yet"], "Deployment": deployment}
    project = state.projects.add_project("acme", 5, fields)
    async with running_standin(state) as standin:
        settings = app_settings(database.url, GITHUB_API_URL=standin.url, APP_ID="1")
        clock = StillClock(T0.timestamp())
        github = GitHubClient(settings, Metrics(), clock=clock)
        await github.start()
        services = wire(database, clock, github, app_id=1)
        outbox = services.outbox(Metrics(), clock=clock, spacing=0.0)
        assert outbox is not None
        try:
            yield Rig(services, outbox, clock, state, project)
        finally:
            await github.close()


def command(rig: Rig, change: object, login: str, role: Role, n: int) -> None:
    """A command that must apply, through the one door, from installation 7."""
    context = Context(Actor(login, frozenset({role})), f"op-{n}", T0, policy_version="v1")
    outcome = rig.services.tickets.execute(KEY, change, context, installation_id=7)  # type: ignore[arg-type]
    assert outcome.applied, outcome.refusal


async def drain(rig: Rig) -> None:
    """Let the outbox perform everything due, moving the clock past each coalescing wait."""
    for _ in range(20):
        while await rig.outbox.run_once():
            pass
        if not effect_counts(rig.services.database).get("pending"):
            return
        rig.clock.now += 1.0
    raise AssertionError("outbox effects still pending")


def project_effects(rig: Rig) -> list[tuple[str, int]]:
    """(status, attempts) of every project-fields effect."""
    table = effects_table.c
    with rig.services.database.read() as connection:
        rows = connection.execute(select(table.status, table.attempts).where(table.kind == "project_fields"))
        return [(row.status, row.attempts) for row in rows]


def status_comment(rig: Rig) -> str:
    [body] = [c.body for c in rig.github.comments.values() if c.app_id]
    return body


async def test_a_burst_is_one_sync_and_a_missing_option_is_said_on_the_status_comment(rig: Rig) -> None:
    """Draft, publish: one effect, the issue added and Work open. Claimed: no option `claimed`,
    said on the status comment, the effect done (not failed, not retried)."""
    command(rig, Draft(), "rachel", Role.REQUESTER, 1)
    command(
        rig, Publish(description="Resumable uploads", first_assignee="olivia"), "rachel", Role.REQUESTER, 2
    )
    await drain(rig)
    shown = rig.project.values_of(REPO, 12)
    assert (shown["Work"], shown["Code"]) == ("open", "nothing reported yet") and "Deployment" in shown
    assert project_effects(rig) == [("done", 1)]
    assert "Project" not in status_comment(rig)
    command(rig, Claim(), "cody", Role.RUNNER, 3)
    await drain(rig)
    assert project_effects(rig) == [("done", 1)]
    assert rig.project.values_of(REPO, 12)["Work"] == "open"
    assert status_comment(rig).count("its field `Work` has no option `claimed`") == 1
    updates = [c for c in rig.github.calls_to("POST", "/graphql") if "updateProjectV2" in c.body["query"]]
    assert len(updates) == 3  # the first sync's three fields; nothing since
