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

Then it stops the faults and, as an operator would once an outage is over, makes what waits
for its next try due now (`railyard redeliver --waiting`, `railyard retry --waiting`: the
backoff after a few failed tries runs past a minute), lets the system settle (bounded:
`--settle`), replays every distinct
delivery once, in the order the stream produced them, to a second, fault-free server on a
fresh database, and checks:

- every acknowledged delivery is stored with a final status (none pending or failed), and no
  GitHub write is pending or failed;
- one status comment per ticket, reading as a fresh render of the ticket's final state; one
  reaction per command comment; no reply written twice; one `railyard` check-run per PR head,
  saying what the clean replay's says;
- no call reached GitHub while a Retry-After it had answered was still running;
- every ticket's rails, attempts, delivery records and command outcomes equal the replay's.

It prints the figures and every violation by kind (with examples), and exits 1 on any. The
stream and the troublemakers live in bench/chaos_actors.py, the checks in bench/chaos_checks.py.

    python bench/chaos.py --minutes 5
    python bench/chaos.py --minutes 3 --postgres private      # a private cluster, restarted
    python bench/chaos.py --minutes 3 --postgres postgresql+psycopg://u:p@host/db   # no restarts
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import random
import signal
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psycopg
import structlog
from sqlalchemy import make_url

from app.contracts.database_url import normalize_database_url
from app.store.database import Database
from app.store.effects import retry_waiting_effects
from app.store.queue_admin import retry_waiting
from bench.api_calls import _endpoint
from bench.chaos_actors import (
    ChaosStream,
    ChaosTicket,
    Figures,
    Killer,
    Options,
    Postman,
    chaos_standin,
    database_restarter,
    replay,
    replay_standin,
    seed_ticket,
    settle,
    start,
)
from bench.chaos_checks import (
    Violations,
    check_deliveries,
    check_github,
    check_limits,
    check_outbox,
    check_replay,
)
from bench.postgres_cluster import PrivateCluster
from github_standin import running_standin
from support.servers import ServerProcess, server_env
from support.world import World

FIRST = 100


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
        print(f"  made due when the faults stopped: {f.hurried[0]} deliveries, {f.hurried[1]} effects")
        print(f"  settled: {f.settled} after {f.settle_seconds:.1f} s")
        total = sum(len(v) for v in self.violations.values())
        print(f"  violations: {total}")
        for kind, examples in sorted(self.violations.items()):
            print(f"    {kind}: {len(examples)}")
            for example in examples[:3]:
                print(f"      e.g. {example}")


class Violated(Exception):  # noqa: N818 - it names what the campaign found
    """The campaign found violations (raised by callers that want an exception, such as tests)."""


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
            figures.hurried = await asyncio.to_thread(_hurry, Database(chaos_url))
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


def _hurry(database: Database) -> tuple[int, int]:
    """What `railyard redeliver --waiting` and `railyard retry --waiting` do: how many of each."""
    now = time.time()
    return len(retry_waiting(database, now)), len(retry_waiting_effects(database, now))


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
