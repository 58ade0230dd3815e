"""GitHub's budget per command at a steady pace and in a burst, with and without conditional requests.

The real server (worker and outbox inside, SQLite, content writes spaced `--spacing` apart)
against the in-process stand-in, which answers conditional requests as GitHub does. Two
scenarios, each run with the HTTP cache off (HTTP_CACHE_MAX_ROWS=0, "before") and on
("after"), back to back:

- steady: six no-code tickets, /publish, /claim, /deliver, /accept for each, one command every
  60/15 s (15 a minute; `--compress K` makes that K times faster), round-robin over the tickets;
- burst: 40 tickets run the same four commands at once; how long until every status comment
  shows its ticket's final state.

Printed for each: calls counted against the installation's rate limit per state change and per
command, 304s, content writes (2xx POST/PATCH/PUT/DELETE on /repos) per command, status-comment
latency p50/p90 (command sent -> its status comment shows the result), and the hourly capacity
per installation those figures imply under GitHub's limits (5,000 counted calls an hour; 80
content writes a minute and 500 an hour).

    python bench/api_calls.py --steady [--compress 1] [--spacing 1.0] [--burst 40]
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text

from app.store.database import Database
from github_standin import Call, StandinState, running_standin
from policies.states import WorkState
from support.servers import app_settings, running_server
from support.world import CONFIG, REPO, World, standin_state

FIRST = 500
EVIDENCE = ("repository_observed", "deployment_observed")
HOURLY_CALLS, WRITES_PER_MINUTE, WRITES_PER_HOUR = 5_000, 80, 500


def commands(number: int) -> list[tuple[str, str, WorkState]]:
    """A no-code ticket's four commands: who, what, and the state it leads to."""
    return [
        ("rachel", "/publish --no-code", WorkState.OPEN),
        ("cody", "/claim", WorkState.CLAIMED),
        ("cody", f"/deliver artifact=https://docs.example.com/{number} Runbook.", WorkState.DELIVERED),
        ("rita", "/accept", WorkState.ACCEPTED),
    ]


@dataclass
class Run:
    """What one scenario cost."""

    label: str
    commands: int
    changes: int
    counted: int
    not_modified: int
    content_writes: int
    latencies: list[float]
    seconds: float
    counted_by_endpoint: Counter[str]

    def line(self) -> str:
        """The run's figures on one line, and the capacity they imply."""
        per_change = self.counted / max(self.changes, 1)
        per_command = self.counted / max(self.commands, 1)
        writes = self.content_writes / max(self.commands, 1)
        capacity = min(
            HOURLY_CALLS / max(per_command, 1e-9),
            WRITES_PER_HOUR / max(writes, 1e-9),
            WRITES_PER_MINUTE * 60 / max(writes, 1e-9),
        )
        latency = ""
        if self.latencies:
            p50, p90 = _percentile(self.latencies, 50), _percentile(self.latencies, 90)
            latency = f", status comment p50 {p50:.2f} s p90 {p90:.2f} s"
        return (
            f"{self.label}: {self.commands} commands, {self.changes} state changes, settled in "
            f"{self.seconds:.1f} s; counted calls {self.counted} = {per_change:.2f} per state change "
            f"({per_command:.2f} per command), 304s {self.not_modified}, content writes "
            f"{self.content_writes} = {writes:.2f} per command{latency}; capacity per installation "
            f"~{capacity:.0f} commands/hour (calls allow {HOURLY_CALLS / max(per_command, 1e-9):.0f}, "
            f"writes {WRITES_PER_HOUR / max(writes, 1e-9):.0f})\n    counted, by endpoint: "
            + ", ".join(f"{n} {shape}" for shape, n in self.counted_by_endpoint.most_common(8))
        )


def _percentile(values: list[float], p: int) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1]


def _state(tickets: list[int]) -> StandinState:
    state = standin_state()
    state.repositories[REPO].files[".github/railyard.yml"] = CONFIG + "limits:\n  commands_per_hour: 10000\n"
    for number in tickets:
        state.add_issue(REPO, number, body=f"Ticket {number}", assignees=["olivia"])
    return state


def _shape(call: Call) -> str:
    """A call as its method and path shape (numbers folded)."""
    return f"{call.method} {re.sub(r'/[0-9]+', '/N', call.path)}"


def _installation_counters(state: StandinState) -> tuple[int, int, int]:
    """Counted calls, 304s and content writes of installation 7 (the app's JWT calls aside)."""
    mine = [c for c in state.calls if c.installation_id == 7]
    return (
        sum(c.counted for c in mine),
        sum(c.status == 304 for c in mine),
        sum(c.content_write for c in mine),
    )


def _changes(database: Database) -> int:
    with database.read() as connection:
        kinds = connection.execute(text("SELECT type FROM ticket_events")).scalars().all()
    return sum(kind not in EVIDENCE for kind in kinds)


async def _shown(world: World, number: int, target: WorkState, sent: float, timeout: float = 120.0) -> float:
    """Seconds from `sent` until the ticket is in `target` (or beyond) and its status comment shows
    the state it is in: the command's result, or a later one that includes it."""
    deadline = sent + timeout
    while time.monotonic() < deadline:
        if _reached(world, number, target) and world.status_comments(number) == [
            world.expected_status(number)
        ]:
            return time.monotonic() - sent
        await asyncio.sleep(0.02)
    raise TimeoutError(f"#{number} never showed {target}")


ORDER = [WorkState.OPEN, WorkState.CLAIMED, WorkState.DELIVERED, WorkState.ACCEPTED]


def _reached(world: World, number: int, target: WorkState) -> bool:
    """The ticket is in `target` or beyond (a later command may already have moved it on)."""
    ticket = world.ticket(number)
    return ticket is not None and ticket.work in ORDER[ORDER.index(target) :]


async def _processed(world: World, number: int, target: WorkState, timeout: float = 900.0) -> None:
    """Wait until the worker has moved the ticket to `target` (its surfaces may still be pending)."""
    deadline = time.monotonic() + timeout
    while not _reached(world, number, target):
        if time.monotonic() > deadline:
            raise TimeoutError(f"#{number} never reached {target}")
        await asyncio.sleep(0.02)


async def _say(world: World, login: str, body: str, number: int) -> None:
    payload = world.write(login, body, number)
    response = await world.server.deliver("issue_comment", json.dumps(payload).encode())
    assert response.status == 202, response.status


async def _serve(cache_on: bool, tickets: list[int], spacing: float, scenario: Any) -> Run:
    state = _state(tickets)
    with tempfile.TemporaryDirectory() as directory:
        url = f"sqlite:///{directory}/railyard.db"
        async with running_standin(state) as standin:
            extra = {} if cache_on else {"HTTP_CACHE_MAX_ROWS": "0"}
            settings = app_settings(url, GITHUB_API_URL=standin.url, APP_ID="1", **extra)
            async with running_server(settings, outbox_spacing=spacing) as server:
                world = World(server, state, Database(url))
                started = time.monotonic()
                latencies = await scenario(world)
                await world.settle(timeout=900.0)
                seconds = time.monotonic() - started
                counted, not_modified, writes = _installation_counters(state)
                changes = _changes(world.database)
                shapes = Counter(_shape(c) for c in state.calls if c.installation_id == 7 and c.counted)
    label = "after (conditional requests)" if cache_on else "before (no conditional requests)"
    return Run(label, 4 * len(tickets), changes, counted, not_modified, writes, latencies, seconds, shapes)


def steady(tickets: list[int], gap: float) -> Any:
    """The steady scenario: one command every `gap` seconds, round-robin over the tickets."""

    async def scenario(world: World) -> list[float]:
        watchers = []
        for step in range(4):
            for number in tickets:
                login, body, target = commands(number)[step]
                sent = time.monotonic()
                await _say(world, login, body, number)
                watchers.append(asyncio.create_task(_shown(world, number, target, sent)))
                await asyncio.sleep(gap)
        return list(await asyncio.gather(*watchers))

    return scenario


def burst(tickets: list[int]) -> Any:
    """The burst scenario: every ticket's four commands at once (each ticket's next one sent as soon
    as the last one is recorded, so they stay in order); it ends when every surface is written."""

    async def one(world: World, number: int) -> None:
        for login, body, target in commands(number):
            await _say(world, login, body, number)
            await _processed(world, number, target)

    async def scenario(world: World) -> list[float]:
        await asyncio.gather(*(one(world, number) for number in tickets))
        return []

    return scenario


async def run_pace(compress: float, spacing: float, burst_size: int) -> None:
    """Both scenarios, before and after, printed as they finish."""
    six = [FIRST + n for n in range(6)]
    gap = 60.0 / 15 / compress
    print(f"steady: 6 tickets x 4 commands, one command every {gap:.2f} s, content writes {spacing} s apart")
    for cache_on in (False, True):
        print("  " + (await _serve(cache_on, six, spacing, steady(six, gap))).line(), flush=True)
    many = [FIRST + 100 + n for n in range(burst_size)]
    print(f"burst: {burst_size} tickets x 4 commands at once (each ticket's in order)")
    for cache_on in (False, True):
        print("  " + (await _serve(cache_on, many, spacing, burst(many))).line(), flush=True)
