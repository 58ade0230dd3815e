"""The chaos campaign's actors (bench/chaos.py): the stream of tickets and what troubles it.

The postman sends each webhook delivery one to three times, late and shuffled, and re-sends
it until a 2xx; the killer SIGKILLs the server (some kills right after a GitHub write) and
starts it again; the database restarter crashes a private PostgreSQL. Settling and the clean
replay, which the checks (bench/chaos_checks.py) compare against, live here too.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import random
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from app.store.database import Database
from app.store.effects import effect_counts
from app.store.queue import queue_depth
from bench.api_calls import Stream, Ticket
from bench.postgres_cluster import PrivateCluster
from github_standin import Call, LimitWatch, RandomFaults, StandinState, running_standin
from support.servers import ServerProcess, app_settings, drained, running_server, signed_headers
from support.world import CONFIG, REPO, World, standin_state

GITHUB_TIMEOUT = aiohttp.ClientTimeout(total=10)  # GitHub gives up on a delivery after 10 s


@dataclass
class Options:
    """One campaign's knobs (the command line's, or the short test's)."""

    minutes: float = 5.0
    postgres: str | None = None  # None: SQLite; "private": a throwaway cluster; else a server URL
    seed: int = 20261130
    tickets_at_once: int = 2
    gap: float = 1.0  # seconds between a ticket's steps
    kill_every: tuple[float, float] = (1.0, 6.0)  # seconds the server lives between kills
    kill_after_write: float = 0.5  # the share of kills that land right after a GitHub write
    restart_database_every: tuple[float, float] = (20.0, 45.0)
    copies: tuple[int, int] = (1, 3)
    shuffle_seconds: float = 3.0  # how late a repository or deployment event may arrive
    copy_within: float = 15.0  # extra copies arrive within this many seconds
    settle: float = 300.0  # at most this long for the queue and the outbox to empty
    # Probabilities per GitHub request (the write faults only on POST and PATCH).
    faults: dict[str, float] = field(
        default_factory=lambda: {
            "server_error": 0.03,
            "error_after_effect": 0.03,
            "drop_after_effect": 0.03,
            "timeout_after_effect": 0.004,
            "secondary_limit": 0.004,
        }
    )
    workdir: Path | None = None


@dataclass
class Figures:
    """What the campaign did to the system, counted as it went."""

    kills: Counter[str] = field(default_factory=Counter)  # by moment
    exits: list[str] = field(default_factory=list)  # the server's own exits (not our kills)
    database_restarts: int = 0
    sends: int = 0
    redeliveries: int = 0
    copies: int = 0
    answers: Counter[str] = field(default_factory=Counter)
    tickets: int = 0
    seconds: float = 0.0
    hurried: tuple[int, int] = (0, 0)  # deliveries and effects made due when the faults stopped
    settled: bool = False
    settle_seconds: float = 0.0


# --- deliveries, sent the way GitHub sends them ---------------------------------------------------


@dataclass
class Delivery:
    """One webhook delivery: its id stays the same however often it is sent."""

    order: int
    id: str
    event: str
    body: bytes
    acknowledged: asyncio.Event = field(default_factory=asyncio.Event)


class Postman:
    """Sends deliveries 1-3 times, late and shuffled; re-sends until a 2xx."""

    def __init__(self, server: ServerProcess, options: Options, figures: Figures, rng: random.Random) -> None:
        self.server, self.options, self.figures, self.rng = server, options, figures, rng
        self.deliveries: list[Delivery] = []
        self.tasks: set[asyncio.Task[None]] = set()
        self.client = aiohttp.ClientSession(timeout=GITHUB_TIMEOUT)

    def post(self, event: str, payload: dict[str, Any], *, late: bool) -> Delivery:
        """Queue a delivery; `late` ones may arrive after later ones."""
        delivery = Delivery(len(self.deliveries), str(uuid.uuid4()), event, json.dumps(payload).encode())
        self.deliveries.append(delivery)
        delay = self.rng.uniform(0, self.options.shuffle_seconds) if late else 0.0
        self._spawn(self._until_acknowledged(delivery, delay))
        for _ in range(self.rng.randint(*self.options.copies) - 1):
            self._spawn(self._copy(delivery, delay + self.rng.uniform(0, self.options.copy_within)))
        return delivery

    def _spawn(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _send(self, delivery: Delivery) -> bool:
        headers = signed_headers(delivery.body, delivery.event, delivery.id)
        self.figures.sends += 1
        try:
            async with self.client.post(
                f"{self.server.url}/webhooks", data=delivery.body, headers=headers
            ) as r:
                self.figures.answers[str(r.status)] += 1
                return r.status in (200, 202)
        except (TimeoutError, aiohttp.ClientError) as error:
            self.figures.answers[type(error).__name__] += 1
            return False

    async def _until_acknowledged(self, delivery: Delivery, delay: float) -> None:
        await asyncio.sleep(delay)
        while not await self._send(delivery):
            self.figures.redeliveries += 1
            await asyncio.sleep(self.rng.uniform(0.3, 2.0))
        delivery.acknowledged.set()

    async def _copy(self, delivery: Delivery, delay: float) -> None:
        await asyncio.sleep(delay)
        self.figures.copies += 1
        await self._send(delivery)

    async def drain(self, timeout: float) -> None:
        """Wait for every send to finish (bounded)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*list(self.tasks), return_exceptions=True), timeout)

    async def close(self) -> None:
        """Cancel what is still to send and close the client."""
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*list(self.tasks), return_exceptions=True)
        await self.client.close()


class ChaosTicket(Ticket):
    """bench/api_calls.py's ticket, its PR numbered far from any issue."""

    @property
    def pull(self) -> int:
        return self.number + 100_000  # never an issue number, however many tickets a run makes


class ChaosStream(Stream):
    """bench/api_calls.py's ticket, sent through the postman; remembers its command comments."""

    def __init__(self, world: World, ticket: Ticket, gap: float, postman: Postman) -> None:
        super().__init__(world, ticket, gap)
        self.postman = postman
        self.commands: list[int] = []

    async def say(self, login: str, body: str) -> None:
        """`login` writes a command on the ticket; remember the comment for the reaction check."""
        payload = self.world.write(login, body, self.ticket.number)
        self.commands.append(int(payload["comment"]["id"]))
        await self.send("issue_comment", payload)

    async def send(self, event: str, payload: dict[str, Any]) -> None:
        """Hand a delivery to the postman; a command waits for its acknowledgement."""
        delivery = self.postman.post(event, payload, late=event != "issue_comment")
        if event == "issue_comment":  # the next command is written once this one was taken
            await delivery.acknowledged.wait()
        await asyncio.sleep(self.gap)


def seed_ticket(state: StandinState, ticket: Ticket) -> None:
    """The ticket's issue (and PR) on the stand-in's acme/web."""
    state.add_issue(REPO, ticket.number, body=f"Ticket {ticket.number}", assignees=["olivia"])
    if ticket.code:
        state.add_pull(REPO, ticket.pull, body=f"Fixes #{ticket.number}", head_ref=ticket.branch,
                       head_sha=ticket.sha(1))  # fmt: skip


def chaos_standin(options: Options) -> StandinState:
    """acme/web as the e2e tests seed it, failing at random, watching its Retry-Afters."""
    state = standin_state()
    # One runner and one reviewer do all the work: lift the per-person command budget.
    state.repositories[REPO].files[".github/railyard.yml"] = CONFIG + "limits:\n  commands_per_hour: 100000\n"
    # The primary budget (5,000 calls an hour) is not under test: this stream is a day's work
    # in minutes and would spend it; the calls made are counted and printed instead.
    state.rate_limit = 10**9
    state.random_faults = RandomFaults(**options.faults, seed=options.seed)  # type: ignore[arg-type]
    state.limit_watch = LimitWatch()
    return state


# --- the troublemakers ----------------------------------------------------------------------------


class Killer:
    """SIGKILLs the server every few seconds and starts it again; restarts it if it exits itself.

    A share of the kills (`after_write`) wait for the next write GitHub performs and land
    right then, before the server hears GitHub's answer: the moment a created comment or
    check-run exists on GitHub but its id is not recorded yet.
    """

    def __init__(self, server: ServerProcess, options: Options, figures: Figures, rng: random.Random) -> None:
        self.server, self.options, self.figures, self.rng = server, options, figures, rng
        self.armed = False
        self.fired = asyncio.Event()

    def after_write(self, call: Call) -> None:
        """The stand-in performed a write: kill now if armed (the answer is not sent yet)."""
        if self.armed and self.alive:
            self.armed = False
            self.server.kill()
            self.figures.kills["right after a GitHub write"] += 1
            self.fired.set()

    @property
    def alive(self) -> bool:
        """Whether the server process is running."""
        return self.server.process is not None and self.server.process.poll() is None

    async def run(self, stop: asyncio.Event) -> None:
        """Kill and restart until `stop` is set."""
        while not stop.is_set():
            deadline = time.monotonic() + self.rng.uniform(*self.options.kill_every)
            while time.monotonic() < deadline and not stop.is_set() and self.alive:
                await asyncio.sleep(0.05)
            if stop.is_set() and self.alive:
                return
            if not self.alive:
                self.figures.exits.append(f"exit code {self.server.process.returncode}")  # type: ignore[union-attr]
            elif self.rng.random() < self.options.kill_after_write:
                await self._kill_after_next_write()
            else:
                self.server.kill()
                self.figures.kills["at a random moment"] += 1
            await start(self.server)

    async def _kill_after_next_write(self) -> None:
        self.fired.clear()
        self.armed = True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.fired.wait(), 3.0)
        if self.armed:  # no write came: kill anyway
            self.armed = False
            self.server.kill()
            self.figures.kills["at a random moment"] += 1


async def start(server: ServerProcess, tries: int = 5) -> None:
    """Start the server, trying again a few times (a database restarting may hold it up)."""
    for attempt in range(tries):
        try:
            await server.start(timeout=30)
            return
        except (RuntimeError, TimeoutError):
            server.kill()
            if attempt == tries - 1:
                raise
            await asyncio.sleep(1.0)


async def database_restarter(cluster: PrivateCluster, stop: asyncio.Event, options: Options,
                             figures: Figures, rng: random.Random) -> None:  # fmt: skip
    """Crash and restart PostgreSQL every half a minute or so."""
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), rng.uniform(*options.restart_database_every))
        if stop.is_set():
            return
        await asyncio.to_thread(cluster.restart, crash=rng.random() < 0.7)
        figures.database_restarts += 1


# --- settling, and the clean replay ---------------------------------------------------------------


async def settle(database: Database, timeout: float) -> bool:
    """Wait until no delivery and no GitHub write is pending, twice in a row a second apart."""
    deadline, quiet = time.monotonic() + timeout, 0
    while time.monotonic() < deadline:
        depth, _ = await asyncio.to_thread(queue_depth, database)
        pending = (await asyncio.to_thread(effect_counts, database)).get("pending", 0)
        quiet = quiet + 1 if depth == 0 and pending == 0 else 0
        if quiet >= 2:
            return True
        await asyncio.sleep(0.5)
    return False


def replay_standin(chaos: StandinState) -> StandinState:
    """GitHub as the stream left it (issues, PRs, branches, people's comments), without what the
    app wrote and without faults."""
    chaos.after_write = None  # the chaos is over; nothing to kill any more
    state = copy.deepcopy(chaos)
    state.comments = {i: c for i, c in state.comments.items() if c.app_id is None}
    state.reactions, state.check_runs, state.calls = [], {}, []
    state.tokens, state.buckets, state.faults = {}, {}, []
    state.random_faults, state.limit_watch = None, None
    return state


async def replay(deliveries: list[Delivery], state: StandinState, url: str, timeout: float) -> bool:
    """Send each distinct delivery once, in the stream's order, to a fresh fault-free server.

    Each is processed before the next is sent, so the order is exactly the stream's, with
    no two tickets' deliveries racing. That server runs in this process without spacing
    GitHub writes (the stand-in does not mind), so the replay takes seconds per hundred.
    """
    database = Database(url)
    async with running_standin(state) as standin:
        settings = app_settings(url, GITHUB_API_URL=standin.url, APP_ID="1")
        async with running_server(settings, outbox_spacing=0.0) as server:
            for delivery in deliveries:
                response = await server.deliver(delivery.event, delivery.body, delivery.id)
                if response.status not in (200, 202):
                    raise RuntimeError(f"the clean server refused {delivery.id}: {response.status}")
                await drained(database, timeout)
            return await settle(database, timeout)
