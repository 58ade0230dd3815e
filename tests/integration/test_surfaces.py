"""The surfaces through the outbox, against the GitHub stand-in: bursts coalesce.

The clock is the app's own (a manual one here), so "within a second" means what the outbox
sees, whatever the machine's speed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.bootstrap import Shell, wire
from app.github.client import GitHubClient
from app.runtime.metrics import Metrics
from app.runtime.outbox import Outbox
from app.store import pulls
from app.store.database import Database
from app.store.effects import effect_counts
from github_standin import StandinState, running_standin
from handlers.ports import PullRequest
from policies.commands import Claim, Context, Draft, Publish
from policies.model import Actor, TicketKey
from policies.rails import CheckObserved, ObservationContext, PullRequestObserved, RailPolicy
from policies.states import Role
from support.world import FIX, REPO, standin_state
from tests.fakes import StillClock, app_settings

KEY = TicketKey(REPO, 12)
PR_URL = "https://github.com/acme/web/pull/34"
T0 = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


@dataclass
class Rig:
    services: Shell
    outbox: Outbox
    clock: StillClock
    github: StandinState


@pytest.fixture
async def rig(database: Database) -> AsyncIterator[Rig]:
    """A service that enqueues surfaces and an outbox that renders them, talking to the stand-in."""
    state = standin_state()
    async with running_standin(state) as standin:
        settings = app_settings(database.url, GITHUB_API_URL=standin.url, APP_ID="1")
        clock = StillClock(T0.timestamp())
        github = GitHubClient(settings, Metrics(), clock=clock)
        await github.start()
        services = wire(database, clock, github, app_id=1)
        renderers = services.surfaces().renderers()
        outbox = Outbox(database, github, Metrics(), app_id=1, clock=clock, spacing=0.0, renderers=renderers)
        try:
            yield Rig(services, outbox, clock, state)
        finally:
            await github.close()


def command(rig: Rig, change: Any, login: str, role: Role, n: int) -> None:
    """A command that must apply, through the one door, from installation 7."""
    context = Context(Actor(login, frozenset({role})), f"op-{n}", T0, policy_version="v1")
    outcome = rig.services.tickets.execute(KEY, change, context, installation_id=7)
    assert outcome.applied, outcome.refusal


def observe(rig: Rig, observation: Any, n: int) -> bool:
    """Record what an event showed; whether it changed the ticket."""
    context = ObservationContext("github", f"obs-{n}", T0, "v1", RailPolicy())
    return rig.services.tickets.execute(KEY, observation, context, installation_id=7).applied


def writes(rig: Rig) -> dict[str, int]:
    """GitHub writes per surface (performed ones: 2xx answers)."""
    calls = [c for c in rig.github.calls if c.method in ("POST", "PATCH") and 200 <= c.status < 300]
    return {
        "status comment": sum("/comments" in c.path and "/reactions" not in c.path for c in calls),
        "check-run": sum("/check-runs" in c.path for c in calls),
    }


async def drain(rig: Rig) -> None:
    """Let the outbox perform everything due, moving the clock past each coalescing wait."""
    for _ in range(20):
        while await rig.outbox.run_once():
            pass
        if not effect_counts(rig.services.database).get("pending"):
            return
        rig.clock.now += 1.0
    raise AssertionError("outbox effects still pending")


async def test_a_hundred_changes_within_a_second_make_at_most_three_writes_per_surface(rig: Rig) -> None:
    """A burst of check results toggling `blocked` becomes a few writes, the last one current."""
    command(rig, Draft(), "rachel", Role.REQUESTER, 1)
    command(
        rig, Publish(description="Resumable uploads", first_assignee="olivia"), "rachel", Role.REQUESTER, 2
    )
    command(rig, Claim(), "cody", Role.RUNNER, 3)
    pull = PullRequestObserved(34, PR_URL, True, True, False, FIX, "agent/12-fix", None, T0)
    stored = PullRequest(REPO, 34, PR_URL, True, False, "agent/12-fix", FIX, None, T0, author="cody")
    with rig.services.database.write() as connection:
        pulls.remember(connection, stored, {12})  # as the pull_request handler does
    assert observe(rig, pull, 4)
    await drain(rig)
    before = writes(rig)
    stop = asyncio.Event()
    performing = asyncio.create_task(rig.outbox.run(stop))
    changed = 0
    for n in range(100):  # the clock stands still: all within one second
        conclusion = "failure" if n % 2 == 0 else "success"
        check = CheckObserved(FIX, "ci", conclusion, 1000 + n, T0 + timedelta(seconds=n))
        changed += await asyncio.to_thread(observe, rig, check, 100 + n)
    stop.set()
    await performing
    rig.clock.now += 1.0
    await drain(rig)
    assert changed == 100
    after = writes(rig)
    burst = {surface: after[surface] - before[surface] for surface in after}
    assert 1 <= burst["status comment"] <= 3 and 1 <= burst["check-run"] <= 3, burst
    [status] = [c.body for c in rig.github.comments.values() if c.app_id]
    assert status.startswith("**Work: claimed · Repository: PR open (#34)")


@pytest.mark.parametrize("interval", [1.0, 5.0])
async def test_a_written_surface_is_written_again_no_sooner_than_the_outbox_interval(
    rig: Rig, interval: float
) -> None:
    """A change right after a status comment's write waits `surface_interval` for the next."""
    outbox = Outbox(
        rig.services.database, rig.outbox.github, Metrics(), app_id=1, clock=rig.clock,
        spacing=0.0, surface_interval=interval, renderers=rig.services.surfaces().renderers(),
    )  # fmt: skip
    command(rig, Draft(), "rachel", Role.REQUESTER, 1)
    command(rig, Publish(description="Resumable uploads"), "rachel", Role.REQUESTER, 2)
    while await outbox.run_once():
        pass
    assert not effect_counts(rig.services.database).get("pending")
    before = writes(rig)["status comment"]
    command(rig, Claim(), "cody", Role.RUNNER, 3)  # at the write's own instant
    rig.clock.now += interval - 0.01
    while await outbox.run_once():
        pass
    assert writes(rig)["status comment"] == before, "written again within the interval"
    rig.clock.now += 0.01
    while await outbox.run_once():
        pass
    assert writes(rig)["status comment"] == before + 1
    assert not effect_counts(rig.services.database).get("pending")
