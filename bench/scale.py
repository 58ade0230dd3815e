"""Scale-out on PostgreSQL, measured: the same backlog drained by 1, 2 and 4 `railyard worker`s.

For each configuration, on a fresh database in a private PostgreSQL cluster of its own
(bench/postgres_cluster.py, fsync on) and a fresh GitHub stand-in subprocess
(`python -m github_standin`, reached over loopback by every process):

1. two `railyard serve` processes (each runs its own worker and outbox, as railyard always
   does) and N `railyard worker --concurrency 4` processes start on the one database;
2. the backlog is posted: `--tickets` tickets, `--tickets-per-installation` to an installation,
   each with `--deliveries-per-ticket` command comments (/publish --no-code, /claim, /deliver,
   /send-back ..., /deliver, /accept) sent as signed webhooks to the two servers in turn, a
   ticket's next command once the previous one was acknowledged, all tickets at once;
3. the stand-in answers the first call about every `--limit-every`th ticket's repository with
   a 403 secondary rate limit and `Retry-After: 2`;
4. drained: from the first send until no delivery is pending (the workers' rate); settled:
   until no GitHub write is pending either (GitHub's one-second spacing of content writes per
   installation paces that part, whatever the number of workers).

Prints each configuration's drain rate, the ratios 2/1 and 4/1, the CPU seconds each kind of
process used while draining (from /proc), the machine's busy and iowait share, PostgreSQL's
commits and WAL syncs, and checks (pass/FAIL): every delivery processed; per-ticket order kept
(each ticket's event log names its commands in the order their webhooks were sent, all
applied); no effect twice (the stand-in's record of writes: one status comment created per
ticket, at most one reaction per command, at most one assignment per /claim); the shared rate
limit respected (the stand-in's LimitWatch: no call reached the installation before the pause
ended). Exits 1 on any FAIL.

    python bench/scale.py [--tickets 40] [--deliveries-per-ticket 6] [--workers 1 2 4]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiohttp
import psycopg

from app.store.database import Database
from app.store.effects import effect_counts
from app.store.queue import queue_depth
from bench.chaos_actors import start
from bench.postgres_cluster import PrivateCluster
from bench.scale_backlog import (
    DONE,
    LIMITS,
    ONCE,
    ORDER,
    Checks,
    Runs,
    Ticket,
    backlog,
    check_deliveries,
    check_limits,
    check_once,
    check_order,
    cpu_seconds,
    machine_ticks,
    payload,
    postgres_cpu,
    runs,
    seed,
)
from github_standin import Fault, StandinProcess, standin_subprocess
from support.servers import ServerProcess, server_env, signed_headers

RETRY_AFTER = 2


@dataclass
class Options:
    """What to drain, and with how many workers."""

    tickets: int = 40
    per_ticket: int = 6
    per_installation: int = 2
    limit_every: int = 10
    workers: tuple[int, ...] = (1, 2, 4)
    rounds: int = 1
    idle_seconds: float = 2.0
    settle: float = 90.0


@dataclass
class Result:
    """One configuration's figures and checks."""

    workers: int
    deliveries: int
    intake: float
    drained: float
    settled: float | None
    cpu: dict[str, float]
    machine: tuple[float, float]  # busy, iowait shares of all cores while draining
    postgres: tuple[int, int, float]  # commits, WAL syncs, seconds syncing
    runs: Runs
    idle: float  # CPU seconds per second the railyard processes used before any delivery came
    checks: Checks

    @property
    def rate(self) -> float:
        """Deliveries drained per second."""
        return self.deliveries / self.drained

    def print(self, heading: str) -> None:
        """The configuration's lines, the first one starting with `heading`."""
        settled = f"{self.settled:.1f} s" if self.settled is not None else "NOT within the bound"
        print(
            f"{heading}workers={self.workers}  deliveries={self.deliveries}  intake {self.intake:.1f} s  "
            f"drained {self.drained:.1f} s = {self.rate:.1f} deliveries/s  settled {settled}",
            flush=True,
        )
        used = sum(self.cpu.values())
        cores = os.cpu_count() or 1
        parts = ", ".join(f"{kind} {seconds:.1f}" for kind, seconds in self.cpu.items())
        print(
            f"  CPU s while draining: {parts} = {used:.1f} of {cores * self.drained:.1f} "
            f"({used / (cores * self.drained):.0%}); machine busy {self.machine[0]:.0%}, "
            f"iowait {self.machine[1]:.0%}"
        )
        railyard = sum(v for k, v in self.cpu.items() if k.startswith(("serve", "worker")))
        print(
            f"  CPU ms per delivery: {1000 * used / self.deliveries:.0f} in all, "
            f"{1000 * railyard / self.deliveries:.1f} in railyard's processes; "
            f"idle, before the backlog, they used {self.idle:.2f} CPU s per second"
        )
        commits, syncs, sync_seconds = self.postgres
        print(f"  postgres: {commits} commits, {syncs} WAL syncs taking {sync_seconds:.2f} s of that time")
        print(f"  {self.runs.line(self.drained)}")
        for note in self.checks.notes:
            print(f"  {note}")
        for check in (DONE, ORDER, ONCE, LIMITS):
            print(f"  {self.checks.line(check)}", flush=True)


# --- the processes --------------------------------------------------------------------------------


@contextlib.contextmanager
def workers(count: int, env: dict[str, str], workdir: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    """`count` `railyard worker --concurrency 4` processes, stopped (SIGTERM) afterwards."""
    started = []
    try:
        for number in range(count):
            with (workdir / f"worker-{number}.log").open("ab") as log:
                command = [str(Path(sys.executable).parent / "railyard"), "worker", "--concurrency", "4"]
                started.append(
                    subprocess.Popen(command, env={**os.environ, **env}, cwd=workdir, stdout=log, stderr=log)
                )
        yield started
    finally:
        for process in started:
            process.terminate()
        for process in started:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()


async def ready(processes: list[subprocess.Popen[bytes]], workdir: Path, timeout: float = 60.0) -> None:
    """Wait until every worker has logged that it started (its migrations checked)."""
    deadline = time.monotonic() + timeout
    for number, process in enumerate(processes):
        log = workdir / f"worker-{number}.log"
        while "worker started" not in log.read_text():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"railyard worker did not start: {log.read_text()[-2000:]}")
            await asyncio.sleep(0.1)


# --- one configuration ----------------------------------------------------------------------------


async def post(servers: list[ServerProcess], tickets: list[Ticket]) -> int:
    """Every ticket's commands, in order, to the two servers in turn; how many were sent."""
    async with aiohttp.ClientSession() as client:

        async def one(index: int, ticket: Ticket) -> None:
            for step, command in enumerate(ticket.commands):
                body = json.dumps(payload(ticket, command)).encode()
                headers = signed_headers(body, "issue_comment", str(uuid.uuid4()))
                url = f"{servers[(index + step) % len(servers)].url}/webhooks"
                async with client.post(url, data=body, headers=headers) as response:
                    if response.status != 202:
                        raise RuntimeError(f"{url} answered {response.status}")

        await asyncio.gather(*(one(index, ticket) for index, ticket in enumerate(tickets)))
    return sum(len(t.commands) for t in tickets)


async def until(condition: str, database: Database, deadline: float) -> float | None:
    """Seconds until nothing is pending in the queue (`drained`) or the outbox too; None if not
    before the deadline."""
    began = time.monotonic()
    while time.monotonic() < deadline:
        depth, _ = await asyncio.to_thread(queue_depth, database)
        effects = (
            0
            if condition == "drained"
            else (await asyncio.to_thread(effect_counts, database)).get("pending", 0)
        )
        if depth == 0 and effects == 0:
            return time.monotonic() - began
        await asyncio.sleep(0.05)
    return None


def postgres_figures(url: str, name: str) -> tuple[int, int, float]:
    """(commits in database `name`, WAL syncs, milliseconds syncing) so far."""
    with psycopg.connect(url, autocommit=True) as connection:
        commits = connection.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = %s", (name,)
        ).fetchone()
        wal = connection.execute("SELECT wal_sync, wal_sync_time FROM pg_stat_wal").fetchone()
    assert commits is not None and wal is not None
    return int(commits[0]), int(wal[0]), float(wal[1])


def cpu_by_kind(
    servers: list[ServerProcess], worker_processes: list[subprocess.Popen[bytes]], standin: StandinProcess,
    cluster: PrivateCluster,
) -> dict[str, float]:  # fmt: skip
    """CPU seconds so far of each kind of process."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "serve x2": sum(cpu_seconds(s.process.pid) for s in servers if s.process is not None),
        f"worker x{len(worker_processes)}": sum(cpu_seconds(w.pid) for w in worker_processes),
        "stand-in": cpu_seconds(standin.process.pid),
        "postgres": postgres_cpu(cluster.data),
        "bench (sender)": own.ru_utime + own.ru_stime,
    }


async def idle_cpu(
    servers: list[ServerProcess], worker_processes: list[subprocess.Popen[bytes]], standin: StandinProcess,
    cluster: PrivateCluster, seconds: float = 2.0,
) -> float:  # fmt: skip
    """CPU seconds per second the servers and workers spend with nothing to do (their polling)."""
    before = cpu_by_kind(servers, worker_processes, standin, cluster)
    await asyncio.sleep(seconds)
    after = cpu_by_kind(servers, worker_processes, standin, cluster)
    return sum(after[k] - before[k] for k in before if k.startswith(("serve", "worker"))) / seconds


async def configuration(count: int, options: Options, cluster: PrivateCluster, workdir: Path) -> Result:
    """Drain the backlog with two servers and `count` workers on a fresh database and stand-in."""
    name = f"scale_{count}_{uuid.uuid4().hex[:6]}"
    url = await asyncio.to_thread(cluster.create_database, name)
    database = Database(url)
    await asyncio.to_thread(database.migrate)  # once, before the processes (they would all race to)
    folder = workdir / name
    folder.mkdir()
    tickets = backlog(options.tickets, options.per_ticket, options.per_installation)
    admin = f"postgresql://postgres@127.0.0.1:{cluster.port}/postgres"
    with standin_subprocess(folder / "standin.port") as standin:
        standin.watch_limits()
        seed(standin, tickets)
        limited = tickets[:: options.limit_every]
        for ticket in limited:
            fault = Fault(status=403, secondary_rate_limit=True, retry_after=RETRY_AFTER)
            standin.inject("*", rf"^/repos/{re.escape(ticket.repository)}/", fault)
        env = server_env(url, standin.url)
        servers = [ServerProcess(env=env, cwd=folder) for _ in range(2)]
        try:
            with workers(count, env, folder) as worker_processes:
                await asyncio.gather(*(start(server) for server in servers), ready(worker_processes, folder))
                idle = await idle_cpu(servers, worker_processes, standin, cluster, options.idle_seconds)
                cpu_before = cpu_by_kind(servers, worker_processes, standin, cluster)
                machine_before, pg_before = machine_ticks(), postgres_figures(admin, name)
                began = time.monotonic()
                sent = await post(servers, tickets)
                intake = time.monotonic() - began
                drained = await until("drained", database, began + options.settle)
                if drained is None:
                    raise RuntimeError(f"the queue did not drain within {options.settle} s")
                drained += intake
                cpu_after = cpu_by_kind(servers, worker_processes, standin, cluster)
                machine_after, pg_after = machine_ticks(), postgres_figures(admin, name)
                settled = await until("settled", database, began + options.settle)
                settled = None if settled is None else settled + drained
        finally:
            for server in servers:
                server.stop()
        checks = Checks()
        check_deliveries(database, sent, checks)
        check_order(database, tickets, checks)
        check_once(standin, tickets, checks)
        check_limits(database, standin, len({t.installation for t in limited}), checks)
    spread = runs(database)
    database.close()
    delta = [after - before for after, before in zip(machine_after, machine_before, strict=True)]
    cpu = {kind: cpu_after[kind] - cpu_before[kind] for kind in cpu_before}
    pg = (pg_after[0] - pg_before[0], pg_after[1] - pg_before[1], (pg_after[2] - pg_before[2]) / 1000)
    shares = (delta[0] / sum(delta), delta[2] / sum(delta))
    return Result(count, sent, intake, drained, settled, cpu, shares, pg, spread, idle, checks)


async def bench(options: Options) -> list[Result]:
    """Every configuration on one private cluster, one after the other."""
    cluster = PrivateCluster()
    await asyncio.to_thread(cluster.start)
    try:
        with psycopg.connect(
            f"postgresql://postgres@127.0.0.1:{cluster.port}/postgres", autocommit=True
        ) as c:
            c.execute("ALTER SYSTEM SET track_wal_io_timing = on")  # pg_stat_wal's sync times
            c.execute("SELECT pg_reload_conf()")
        with tempfile.TemporaryDirectory(prefix="railyard-scale-") as directory:
            results = []
            for round_ in range(options.rounds):
                for count in options.workers:
                    result = await configuration(count, options, cluster, Path(directory))
                    result.print(f"round {round_ + 1}: " if options.rounds > 1 else "")
                    results.append(result)
            return results
    finally:
        await asyncio.to_thread(cluster.stop)


def main() -> None:
    """Run every configuration, print the ratios; exit 1 on any failed check."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tickets", type=int, default=40)
    parser.add_argument("--deliveries-per-ticket", type=int, default=6, help="even, at least 4")
    parser.add_argument("--tickets-per-installation", type=int, default=2)
    parser.add_argument("--limit-every", type=int, default=10, help="a Retry-After on every Nth ticket")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--rounds", type=int, default=1, help="run every configuration this many times")
    parser.add_argument(
        "--idle-seconds", type=float, default=2.0, help="how long to watch the idle processes"
    )
    args = parser.parse_args()
    if args.deliveries_per_ticket < 4 or args.deliveries_per_ticket % 2:
        parser.error("--deliveries-per-ticket must be even and at least 4")
    options = Options(
        args.tickets, args.deliveries_per_ticket, args.tickets_per_installation, args.limit_every,
        tuple(args.workers), args.rounds, args.idle_seconds,
    )  # fmt: skip
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"cores={os.cpu_count()}  load average before: {load}  python={sys.version.split()[0]}", flush=True)
    results = asyncio.run(bench(options))
    rates = {n: statistics.median(r.rate for r in results if r.workers == n) for n in options.workers}
    base = options.workers[0]
    ratios = "  ".join(f"{n}/{base}: {rates[n] / rates[base]:.2f}" for n in options.workers[1:])
    medians = ", ".join(f"{n} workers {rate:.1f}/s" for n, rate in rates.items())
    print(f"drain rates (median of {options.rounds}): {medians}; ratios: {ratios}")
    sys.exit(1 if any(r.checks.failures for r in results) else 0)


if __name__ == "__main__":
    main()
