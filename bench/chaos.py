"""The chaos campaign: the record cannot be bent by kills, duplicates, reordering or a failing GitHub.

Runs the real server (`railyard serve`, a subprocess) against the GitHub stand-in (in this
process) while a realistic stream of tickets flows in (bench/api_calls.py's stream: /publish,
/claim, a PR opened and pushed to, CI, /deliver, every third ticket sent back, /accept, the PR
merged, a deployment; one ticket in four without code), and meanwhile:

- SIGKILLs the server every few seconds (`--kill-every`) and starts it again at once;
- sends every webhook delivery one to three times (same delivery id), repository and
  deployment events shuffled (each ticket's commands stay in the order people wrote them,
  as people write the next command after the previous one was taken);
- re-sends, as GitHub's redelivery would, every delivery that got no 2xx until one does;
- makes GitHub fail: 5xx, 5xx after the write took place, the connection dropped after the
  write, an answer stalled past the client's timeout after the write, 403 secondary limits
  with Retry-After;
- on PostgreSQL (`--postgres private`: a throwaway cluster of its own) crashes and restarts
  the database every half a minute or so.

Then it stops the faults, lets the system settle (bounded: `--settle`), replays every distinct
delivery once, in the order the stream produced them, to a second, fault-free server on a
fresh database, and checks:

- every acknowledged delivery is stored with a final status (none pending or failed), and no
  GitHub write is pending or failed;
- one status comment per ticket, reading as a fresh render of the ticket's final state; one
  reaction per command comment; no reply written twice; one `railyard` check-run per PR head,
  saying what the clean replay's says;
- no call reached GitHub while a Retry-After it had answered was still running;
- every ticket's rails, attempts, delivery records and command outcomes equal the replay's.

It prints the figures and every violation by kind (with examples), and exits 1 on any.

    python bench/chaos.py --minutes 5
    python bench/chaos.py --minutes 3 --postgres private      # a private cluster, restarted
    python bench/chaos.py --minutes 3 --postgres postgresql+psycopg://u:p@host/db   # no restarts
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import json
import logging
import random
import signal
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiohttp
import psycopg
import structlog
from sqlalchemy import make_url, text

from app.settings import normalize_database_url
from app.store.database import Database
from app.store.effects import effect_counts, marker
from app.store.queue import queue_depth
from app.views.surfaces import status_key
from bench.api_calls import Stream, Ticket, _endpoint
from bench.postgres_cluster import PrivateCluster
from policies.checks import CHECK_NAME
from tests.e2e.world import CONFIG, REPO, World, standin_state
from tests.fakes import (
    ServerProcess,
    app_settings,
    drained,
    running_server,
    server_env,
    signed_headers,
)
from tests.github_standin import Call, LimitWatch, RandomFaults, StandinState, running_standin

FIRST = 100
GITHUB_TIMEOUT = aiohttp.ClientTimeout(total=10)  # GitHub gives up on a delivery after 10 s
MARKER_PREFIX = "<!-- railyard:effect:"


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
    settled: bool = False
    settle_seconds: float = 0.0


@dataclass
class Report:
    """What the campaign did and what it found."""

    figures: Figures
    deliveries: int
    faults: Counter[str]
    violations: dict[str, list[str]]
    calls: Counter[str] = field(default_factory=Counter)  # the chaos run's, by endpoint

    def print(self, minutes: float) -> None:
        f = self.figures
        print(f"chaos: {minutes:g} minutes asked, {f.seconds / 60:.1f} minutes of chaos, {f.tickets} tickets")
        moments = ", ".join(f"{n} {moment}" for moment, n in sorted(f.kills.items()))
        print(
            f"  server kills (SIGKILL): {sum(f.kills.values())} ({moments}); exits on its own: {len(f.exits)}"
        )
        print(f"  database restarts: {f.database_restarts}")
        print(f"  deliveries: {self.deliveries} distinct, {f.sends} sends "
              f"({f.copies} extra copies, {f.redeliveries} redeliveries after no 2xx)")  # fmt: skip
        print(f"  answers: {dict(sorted(f.answers.items()))}")
        top = ", ".join(f"{n} {endpoint}" for endpoint, n in self.calls.most_common(4))
        print(f"  GitHub calls: {sum(self.calls.values())} (most: {top})")
        print(f"  GitHub faults injected: {sum(self.faults.values())} {dict(sorted(self.faults.items()))}")
        print(f"  settled: {f.settled} after {f.settle_seconds:.1f} s")
        total = sum(len(v) for v in self.violations.values())
        print(f"  violations: {total}")
        for kind, examples in sorted(self.violations.items()):
            print(f"    {kind}: {len(examples)}")
            for example in examples[:3]:
                print(f"      e.g. {example}")


class Violated(Exception):  # noqa: N818 - it names what the campaign found
    """The campaign found violations (raised by callers that want an exception, such as tests)."""


class Violations(defaultdict[str, list[str]]):
    """Violations by kind, each with its examples."""

    def __init__(self) -> None:
        super().__init__(list)

    def add(self, kind: str, example: str) -> None:
        """Record one violation of `kind`, with an example a person can look up."""
        self[kind].append(example)


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


# --- the checks -----------------------------------------------------------------------------------


def check_deliveries(database: Database, deliveries: list[Delivery], found: Violations) -> None:
    """Every acknowledged delivery is stored with a final status."""
    with database.read() as connection:
        rows = connection.execute(
            text("SELECT delivery_id, status, last_error, attempts FROM webhook_deliveries")
        ).all()
    stored = {row.delivery_id: row for row in rows}
    for delivery in deliveries:
        row = stored.get(delivery.id)
        if not delivery.acknowledged.is_set():
            found.add("delivery never acknowledged", f"{delivery.event} {delivery.id}")
        elif row is None:
            found.add("acknowledged delivery lost", f"{delivery.event} {delivery.id}")
        elif row.status not in ("done", "ignored"):
            example = f"{delivery.event} {delivery.id} after {row.attempts} attempts: {row.last_error}"
            found.add(f"delivery {row.status}", example)


def check_outbox(database: Database, found: Violations) -> None:
    """No intended GitHub write is still pending or failed."""
    with database.read() as connection:
        rows = connection.execute(
            text("SELECT dedupe_key, status, attempts, last_error FROM outbox_effects "
                 "WHERE status IN ('pending', 'failed')")
        ).all()  # fmt: skip
    for row in rows:
        found.add(f"GitHub write {row.status}", f"{row.dedupe_key} after {row.attempts}: {row.last_error}")


def effect_marker(body: str) -> str | None:
    """The outbox marker a comment of the app ends with, if any."""
    start = body.rfind(MARKER_PREFIX)
    return body[start:] if start >= 0 else None


def check_github(world: World, streams: list[ChaosStream], found: Violations) -> None:
    """What GitHub shows: one status comment per ticket, as it renders now; one reaction per
    command; no reply twice; at most one railyard check-run per commit."""
    for stream in streams:
        number = stream.ticket.number
        shown = world.status_comments(number)
        if len(shown) != 1:
            found.add("status comments != 1", f"#{number}: {len(shown)}")
        elif world.ticket(number) is not None and shown[0] != world.expected_status(number):
            found.add("status comment stale", f"#{number}")
        for comment_id in stream.commands:
            reactions = world.reactions_to(comment_id)
            if len(reactions) != 1:
                found.add("reactions != 1 per command", f"#{number} comment {comment_id}: {reactions}")
    statuses = {marker(status_key(REPO, stream.ticket.number)) for stream in streams}
    replies = Counter(
        (c.issue_number, effect_marker(c.body))
        for c in world.github.comments.values()
        if c.app_id and effect_marker(c.body) not in statuses
    )
    for (number, text_marker), n in replies.items():
        if n > 1:
            found.add("reply written more than once", f"#{number}: {n} x {text_marker}")
    runs = Counter(r.head_sha for r in world.github.check_runs.values() if r.name == CHECK_NAME)
    for sha, n in runs.items():
        if n > 1:
            found.add("check-runs > 1 per commit", f"{sha[:12]}: {n}")


def check_limits(state: StandinState, found: Violations) -> None:
    """No call reached GitHub through a Retry-After it had answered."""
    assert state.limit_watch is not None
    for installation, method, path, since, left in state.limit_watch.ignored:
        example = f"installation {installation}: {method} {path}, {since} s after the 403, {left} s early"
        found.add("call during Retry-After", example)


def facts(database: Database) -> dict[int, dict[str, Any]]:
    """Each ticket's revision-independent facts: rails, attempts, delivery records, command outcomes."""
    out: dict[int, dict[str, Any]] = defaultdict(lambda: defaultdict(list))
    with database.read() as connection:
        for row in connection.execute(text("SELECT number, work, integration, deployment FROM tickets")):
            out[row.number]["rails"] = [row.work, row.integration, row.deployment]
        attempts = connection.execute(text(
            "SELECT t.number, a.number AS n, a.runner, a.opened_by, a.check_in_minutes, a.branch "
            "FROM attempts a JOIN tickets t ON t.id = a.ticket_id ORDER BY t.number, a.number"
        ))  # fmt: skip
        for row in attempts:
            out[row.number]["attempts"].append(list(row)[1:])
        records = connection.execute(text(
            "SELECT t.number, d.attempt, d.runner, d.summary, d.branch, d.commit_sha, d.pull_request, "
            "d.artifacts, d.comment_id FROM delivery_records d JOIN tickets t ON t.id = d.ticket_id "
            "ORDER BY t.number, d.comment_id"
        ))  # fmt: skip
        for row in records:
            out[row.number]["delivery records"].append(list(row)[1:])
        operations = connection.execute(text(
            "SELECT number, operation_id, outcome, refusal_code FROM operations WHERE change LIKE '/%' "
            "ORDER BY number, operation_id"
        ))  # fmt: skip
        for row in operations:
            out[row.number]["command outcomes"].append(list(row)[1:])
    return out


def check_replay(chaos: World, clean: World, numbers: list[int], found: Violations) -> None:
    """Every ticket's facts, and its check-runs' verdicts, equal the clean replay's."""
    ours, theirs = facts(chaos.database), facts(clean.database)
    for number in numbers:
        for name in ("rails", "attempts", "delivery records", "command outcomes"):
            mine, clean_one = ours[number].get(name), theirs[number].get(name)
            if json.dumps(mine, default=str) != json.dumps(clean_one, default=str):
                found.add(f"{name} differ from the replay", f"#{number}: {mine} != {clean_one}")
    # A superseded head's check says whatever was true when it stopped being the head, which
    # depends on timing; the check that gates the merge is the one on each PR's last head.
    verdicts = [_verdicts(chaos.github), _verdicts(clean.github)]
    heads = {pull.head_sha for pull in chaos.github.repositories[REPO].pulls.values()}
    for sha in sorted(heads & (set(verdicts[0]) | set(verdicts[1]))):
        if verdicts[0].get(sha) != verdicts[1].get(sha):
            found.add(
                "check-run differs from the replay",
                f"{sha[:12]}: {verdicts[0].get(sha)} != {verdicts[1].get(sha)}",
            )


def _verdicts(state: StandinState) -> dict[str, tuple[str | None, str | None]]:
    runs = sorted((r for r in state.check_runs.values() if r.name == CHECK_NAME), key=lambda r: r.id)
    return {r.head_sha: (r.conclusion, r.output.get("title")) for r in runs}


# --- the campaign ---------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def databases(options: Options, workdir: Path) -> AsyncIterator[tuple[str, str, PrivateCluster | None]]:
    """The chaos run's and the replay's database URLs (and the cluster to restart, if ours)."""
    if options.postgres is None:
        yield f"sqlite:///{workdir}/chaos.db", f"sqlite:///{workdir}/replay.db", None
        return
    if options.postgres != "private":
        async with foreign_databases(options.postgres) as (chaos_url, replay_url):
            yield chaos_url, replay_url, None
        return
    cluster = PrivateCluster()
    await asyncio.to_thread(cluster.start)
    try:
        chaos_url = await asyncio.to_thread(cluster.create_database, "chaos")
        replay_url = await asyncio.to_thread(cluster.create_database, "replay")
        yield chaos_url, replay_url, cluster
    finally:
        await asyncio.to_thread(cluster.stop)


@contextlib.asynccontextmanager
async def foreign_databases(url: str) -> AsyncIterator[tuple[str, str]]:
    """Two fresh databases on a server we do not own (never restarted), dropped afterwards."""
    server = make_url(normalize_database_url(url))
    names = [f"railyard_chaos_{uuid.uuid4().hex[:8]}", f"railyard_replay_{uuid.uuid4().hex[:8]}"]
    admin = server.set(drivername="postgresql").render_as_string(hide_password=False)

    def run(statement: str) -> None:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(statement)  # type: ignore[arg-type] # our own generated names

    for name in names:
        await asyncio.to_thread(run, f'CREATE DATABASE "{name}"')
    try:
        urls = [server.set(database=name).render_as_string(hide_password=False) for name in names]
        yield urls[0], urls[1]
    finally:
        for name in names:
            with contextlib.suppress(psycopg.Error):
                await asyncio.to_thread(run, f'DROP DATABASE "{name}" WITH (FORCE)')


async def campaign(options: Options) -> Report:
    """Run the chaos, settle, replay cleanly and check; the report of it all."""
    with _workdir(options) as workdir:
        async with databases(options, workdir) as (chaos_url, replay_url, cluster):
            return await _campaign(options, workdir, chaos_url, replay_url, cluster)


@contextlib.contextmanager
def _workdir(options: Options) -> Iterator[Path]:
    if options.workdir is not None:
        options.workdir.mkdir(parents=True, exist_ok=True)
        yield options.workdir
        return
    with tempfile.TemporaryDirectory(prefix="railyard-chaos-") as directory:
        yield Path(directory)


async def _campaign(options: Options, workdir: Path, chaos_url: str, replay_url: str,
                    cluster: PrivateCluster | None) -> Report:  # fmt: skip
    rng, figures, found = random.Random(options.seed), Figures(), Violations()
    state = chaos_standin(options)
    assert state.random_faults is not None
    faults = state.random_faults
    streams: list[ChaosStream] = []
    async with running_standin(state) as standin:
        (workdir / "chaos").mkdir(exist_ok=True)
        server = ServerProcess(
            env=server_env(chaos_url, standin.url, LOG_LEVEL="warning"), cwd=workdir / "chaos"
        )
        postman = Postman(server, options, figures, rng)
        stop = asyncio.Event()
        troublemakers: list[asyncio.Task[None]] = []
        try:
            await start(server)
            killer = Killer(server, options, figures, rng)
            state.after_write = killer.after_write
            troublemakers.append(asyncio.create_task(killer.run(stop)))
            if cluster is not None:
                troublemakers.append(
                    asyncio.create_task(database_restarter(cluster, stop, options, figures, rng))
                )
            world = World(None, state, Database(chaos_url))
            began = time.monotonic()
            await _stream(world, postman, options, streams, began + options.minutes * 60)
            figures.seconds = time.monotonic() - began
            stop.set()
            faults.enabled = False
            state.after_write = None
            await asyncio.gather(*troublemakers, return_exceptions=True)
            if server.process is None or server.process.poll() is not None:
                await start(server)
            settle_began = time.monotonic()
            await postman.drain(timeout=options.settle)
            figures.settled = await settle(Database(chaos_url), options.settle)
            figures.settle_seconds = time.monotonic() - settle_began
            figures.tickets = len(streams)
            world = World(None, state, Database(chaos_url))
            check_deliveries(world.database, postman.deliveries, found)
            check_outbox(world.database, found)
            check_github(world, streams, found)
            check_limits(state, found)
        finally:
            stop.set()
            for task in troublemakers:
                task.cancel()
            server.kill()
            await postman.close()
        clean_state = replay_standin(state)
        if not await replay(postman.deliveries, clean_state, replay_url, options.settle):
            found.add("the clean replay did not settle", "its queue or outbox still had work")
        clean = World(None, clean_state, Database(replay_url))
        check_replay(world, clean, [s.ticket.number for s in streams], found)
    for exit_note in figures.exits:
        found.add("server exited on its own", exit_note)
    calls = Counter(_endpoint(call) for call in state.calls)
    return Report(figures, len(postman.deliveries), Counter(faults.injected), dict(found), calls)


async def _stream(world: World, postman: Postman, options: Options, streams: list[ChaosStream],
                  until: float) -> None:  # fmt: skip
    """Keep `tickets_at_once` tickets going until `until`; let the last ones finish."""
    numbers = iter(range(FIRST, 10**6))

    async def one_after_another() -> None:
        while time.monotonic() < until:
            number = next(numbers)
            ticket = ChaosTicket(number, code=number % 4 != 3)
            seed_ticket(world.github, ticket)
            stream = ChaosStream(world, ticket, options.gap, postman)
            streams.append(stream)
            await stream.run()

    await asyncio.gather(*(one_after_another() for _ in range(options.tickets_at_once)))


async def _bounded(work: Coroutine[Any, Any, Report], budget: float) -> Report:
    """`work` within `budget` seconds; SIGTERM or SIGINT cancel it, so its cleanup still runs
    (the servers killed, the private cluster stopped)."""
    task = asyncio.ensure_future(asyncio.wait_for(work, budget))
    for signum in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(signum, task.cancel)
    return await task


def main() -> None:
    """Run the campaign from the command line; exit 1 on any violation."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--postgres", help='"private" (a throwaway cluster, restarted) or a server URL')
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--tickets-at-once", type=int, default=2)
    parser.add_argument("--kill-every", type=float, nargs=2, default=(1.0, 6.0), metavar=("MIN", "MAX"))
    parser.add_argument(
        "--settle", type=float, default=300.0, help="seconds to wait for the system to settle"
    )
    parser.add_argument("--workdir", type=Path, help="keep the databases and server logs here")
    args = parser.parse_args()
    options = Options(
        minutes=args.minutes,
        postgres=args.postgres,
        seed=args.seed,
        tickets_at_once=args.tickets_at_once,
        kill_every=tuple(args.kill_every),
        settle=args.settle,
        workdir=args.workdir,
    )
    # Bounded whatever happens: the chaos, two settles, the replay, and slack.
    budget = options.minutes * 60 + 3 * options.settle + 300
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)  # connections cut by the kills
    # The replay's server runs in this process: its info lines would drown the figures.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    report = asyncio.run(_bounded(campaign(options), budget))
    report.print(options.minutes)
    sys.exit(1 if report.violations else 0)


if __name__ == "__main__":
    main()
