"""Webhook intake under load: acknowledged deliveries per second, and acknowledgement latency.

Drives a real `railyard serve` (a subprocess, the worker running inside it) over loopback:

1. full load: `wrk` (Debian's package) posting signed 13 KB `issue_comment` deliveries, each
   with its own delivery id, from 16 connections (`--connections`); prints acknowledged
   deliveries per second;
2. fixed rate: 1,000 deliveries per second (`--rate`) for 10 s from an asyncio client, latency measured
   from each request's scheduled send time (no coordinated omission); prints p50/p99;
3. for reference, full load again against the intake alone (`bench/intake_alone.py`: the same
   server with no worker), to show what the worker in the same process costs;
4. side by side, full load and the fixed rate again against the references issue 28 names, on
   the same payloads: a stateless gidgethub bot (`bench/stateless_bot.py`: gidgethub's
   `Event.from_http` verifies the signature and parses the JSON, it answers 202, stores
   nothing), then Probot (`bench/probot/index.js`, when `make bench-probot` has installed it
   and `node` is on PATH); and the ratios railyard/reference of the full-load rate (railyard
   with its worker, and its intake alone) and of the p99 at the fixed rate: figures that mean
   something on any machine;
5. with `--rounds N`, N rounds of full load on railyard (a fresh database, its worker running),
   the bot and Probot one right after the other, and each reference's ratio round by round
   with its median: what the figures of steps 1 and 4, taken a minute apart, cannot say on a
   machine whose speed drifts by half within that minute;
6. drain: 5,000 stored `installation_repositories` deliveries processed by the worker.

    python bench/intake.py [--postgres URL|private] [--seconds 10] [--rate 1000] [--rounds 5]
                           [--connections 16]

At 16 connections railyard's rate is bounded by each delivery's round trip (its commit's fsync
and the writer process's turn), where the bot's is bounded by its one core: `--connections 64`
shows what more deliveries in flight do to each.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
from sqlalchemy import func, select

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.store.database import Database
from app.store.intake import IncomingDelivery, sign, write_batch
from app.store.queue import deliveries, queue_depth
from bench.postgres_cluster import PrivateCluster
from support.databases import reset_schema
from support.payloads import example
from support.servers import WEBHOOK_SECRET, ServerProcess, private_key_pem

PAYLOAD_BYTES = 13 * 1024
PROBOT = ROOT / "bench" / "probot"  # `make bench-probot` installs it
WRK_SCRIPT = """
local counter = 0
local threads = 0
function setup(thread)
  thread:set("tid", threads)
  threads = threads + 1
end
function init(args)
  local file = io.open(args[1], "rb")
  body = file:read("*all")
  file:close()
  signature = args[2]
  run = args[3]
end
function request()
  counter = counter + 1
  local headers = {}
  headers["Content-Type"] = "application/json"
  headers["X-GitHub-Event"] = "issue_comment"
  headers["X-Hub-Signature-256"] = signature
  headers["X-GitHub-Delivery"] = run .. "-" .. tid .. "-" .. counter
  return wrk.format("POST", "/webhooks", headers, body)
end
"""


def comment_payload() -> bytes:
    """A real `issue_comment.created` payload, its comment padded to 13 KB."""
    payload = json.loads(example("api.github.com", "issue_comment", "02-created.json"))
    base = len(json.dumps(payload).encode())
    payload["comment"]["body"] += " " + "lorem ipsum " * ((PAYLOAD_BYTES - base) // 12)
    return json.dumps(payload).encode()


def run_wrk(url: str, body_file: Path, signature: str, seconds: int, connections: int) -> dict[str, float]:
    """Full load with wrk; requests/s, non-2xx count and latency percentiles."""
    script = body_file.parent / "intake.lua"
    script.write_text(WRK_SCRIPT)
    command = [
        "wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", str(script), url,
        "--", str(body_file), signature, f"run{time.time_ns()}",
    ]  # fmt: skip
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))  # type: ignore[union-attr]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    percentiles = dict(re.findall(r"^\s+(50|99)%\s+([\d.]+\w+)", output, re.MULTILINE))
    return {"rate": rate, "non_2xx": float(errors.group(1)) if errors else 0.0, **percentiles}


def wrk_figures(full: dict[str, float]) -> str:
    """One wrk run's rate, latency percentiles and error count, as printed."""
    return (
        f"{full['rate']:8.0f} acknowledged/s  p50={full.get('50')} p99={full.get('99')} "
        f"non-2xx={full['non_2xx']:.0f}"
    )


async def post_comment(
    client: aiohttp.ClientSession, url: str, body: bytes, signature: str, delivery_id: str
) -> None:
    """POST one signed `issue_comment` delivery and read the answer; a status other than 2xx
    (Probot answers 200, railyard and the bot 202) stops the bench."""
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": "issue_comment",
        "X-GitHub-Delivery": delivery_id,
        "X-Hub-Signature-256": signature,
    }
    async with client.post(f"{url}/webhooks", data=body, headers=headers) as response:
        await response.read()
        if not 200 <= response.status < 300:
            raise RuntimeError(f"the server answered {response.status}")


async def fixed_rate(url: str, body: bytes, signature: str, rate: int, seconds: int) -> list[float]:
    """Send `rate` deliveries per second; latencies (ms) from each scheduled send time."""
    latencies: list[float] = []
    connector = aiohttp.TCPConnector(limit=64)
    async with aiohttp.ClientSession(connector=connector) as client:
        start = time.perf_counter() + 0.2
        tasks = []

        async def one(number: int, scheduled: float) -> None:
            await asyncio.sleep(max(0.0, scheduled - time.perf_counter()))
            await post_comment(client, url, body, signature, f"fixed-{start}-{number}")
            latencies.append((time.perf_counter() - scheduled) * 1000)

        for number in range(rate * seconds):
            tasks.append(asyncio.create_task(one(number, start + number / rate)))
        await asyncio.gather(*tasks)
    return sorted(latencies)


def drain_deliveries(count: int) -> list[IncomingDelivery]:
    """Stored `installation_repositories.added` deliveries, 50 installations interleaved."""
    template = json.loads(example("api.github.com", "installation_repositories", "01-added.json"))
    now = time.time()
    out = []
    for number in range(count):
        installation = 5000 + number % 50
        payload = {**template, "installation": {"id": installation}, "repositories_removed": []}
        payload["repositories_added"] = [
            {"id": number, "name": f"r{number}", "full_name": f"drain/r{number}"}
        ]
        out.append(
            IncomingDelivery(
                f"drain-{now}-{number}",
                "installation_repositories",
                "added",
                installation,
                None,
                f"installation:{installation}",
                "pending",
                json.dumps(payload),
                0,
                now,
                now,
            )
        )
    return out


def queue_counts(database_url: str) -> tuple[int, int]:
    """(pending, processed) deliveries."""
    database = Database(database_url)
    try:
        pending = queue_depth(database)[0]
        with database.read() as connection:
            total = connection.execute(select(func.count()).select_from(deliveries)).scalar_one()
    finally:
        database.close()
    return pending, total - pending


def latency_figures(latencies: list[float]) -> str:
    """A fixed-rate run's percentiles, as printed."""
    return (
        f"p50={percentile(latencies, 0.50):.2f} ms  p99={percentile(latencies, 0.99):.2f} ms  "
        f"max={latencies[-1]:.2f} ms  n={len(latencies)}"
    )


def percentile(values: list[float], fraction: float) -> float:
    """The value below which `fraction` of the sorted values fall."""
    return values[min(len(values) - 1, int(fraction * len(values)))]


@dataclass(frozen=True)
class Load:
    """What every server in a run is driven with: the signed payload, for how long, at what rate."""

    body_file: Path
    signature: str
    seconds: int
    rate: int  # deliveries per second in the fixed-rate part
    connections: int = 16  # wrk's, under full load


async def bench(
    label: str,
    database_url: str,
    workdir: Path,
    seconds: int,
    rate: int,
    rounds: int = 0,
    connections: int = 16,
) -> None:
    """One database: full load, fixed rate, intake alone, the gidgethub bot and Probot, drain."""
    env = {
        "DATABASE_URL": database_url,
        "APP_ID": "1",
        "PRIVATE_KEY": private_key_pem(),
        "WEBHOOK_SECRET": WEBHOOK_SECRET,
        "GITHUB_API_URL": "http://127.0.0.1:9",
    }
    body = comment_payload()
    load = Load(workdir / "comment.json", sign(body, WEBHOOK_SECRET.encode()), seconds, rate, connections)
    load.body_file.write_bytes(body)
    server = ServerProcess(env=env, cwd=workdir)
    await server.start()
    try:
        full_load = run_wrk(server.url, load.body_file, load.signature, seconds, connections)
        print(
            f"{label:<10} full load (wrk -t2 -c{connections}, {len(body)} B): {wrk_figures(full_load)}",
            flush=True,
        )
        pending, processed = queue_counts(database_url)
        print(
            f"{label:<10} meanwhile the worker processed {processed} ({processed / seconds:.0f}/s; "
            f"it yields while the intake is saturated); {pending} wait",
            flush=True,
        )
        latencies = await fixed_rate(server.url, body, load.signature, rate, seconds)
        print(f"{label:<10} fixed {rate}/s for {seconds}s: {latency_figures(latencies)}", flush=True)
        _, processed_after = queue_counts(database_url)
        print(
            f"{label:<10} meanwhile the worker processed {processed_after - processed} "
            f"({(processed_after - processed) / seconds:.0f}/s, the backlog of one issue, in order)",
            flush=True,
        )
    finally:
        server.stop()
    alone = ServerProcess(
        env=env, cwd=workdir, command=[sys.executable, str(ROOT / "bench" / "intake_alone.py")]
    )
    await alone.start()
    try:
        full = run_wrk(alone.url, load.body_file, load.signature, seconds, connections)
        print(f"{label:<10} for reference, intake alone (no worker): {wrk_figures(full)}", flush=True)
    finally:
        alone.stop()
    railyard = Figures(full_load["rate"], full["rate"], latencies)
    await side_by_side(label, railyard, env, workdir, load)
    if rounds:
        await pairs(label, database_url, workdir, env, load, rounds)
    await drain(label, database_url, workdir, env)


@dataclass(frozen=True)
class Figures:
    """railyard's own figures in a run, for the ratios against each reference."""

    rate: float  # full load, with the worker in the same process
    alone_rate: float  # full load, the intake alone
    latencies: list[float]  # at the fixed rate, sorted


async def side_by_side(label: str, railyard: Figures, env: dict[str, str], workdir: Path, load: Load) -> None:
    """The gidgethub bot, then Probot when installed, under the same load; railyard/reference ratios."""
    bot = [sys.executable, str(ROOT / "bench" / "stateless_bot.py")]
    await against(label, "gidgethub bot", bot, railyard, env, workdir, load)
    if shutil.which("node") is None or not (PROBOT / "node_modules").is_dir():
        print(
            f"{label:<10} Probot: not installed, left out (`make bench-probot` installs it into "
            "bench/probot/node_modules; it needs node and npm)",
            flush=True,
        )
        return
    await against(label, "Probot", ["node", str(PROBOT / "index.js")], railyard, env, workdir, load)


async def against(
    label: str,
    name: str,
    command: list[str],
    railyard: Figures,
    env: dict[str, str],
    workdir: Path,
    load: Load,
) -> None:
    """One reference server under the same full load and fixed rate, then the ratios to it."""
    reference = ServerProcess(env=env, cwd=workdir, command=command)
    await reference.start()
    try:
        full = run_wrk(reference.url, load.body_file, load.signature, load.seconds, load.connections)
        print(f"{label:<10} {name}, full load: {wrk_figures(full)}", flush=True)
        if full["non_2xx"]:
            print(f"{label:<10} {name} refused deliveries: the ratios below mean nothing", flush=True)
        body = load.body_file.read_bytes()
        latencies = await fixed_rate(reference.url, body, load.signature, load.rate, load.seconds)
        pace = f"fixed {load.rate}/s for {load.seconds}s"
        print(f"{label:<10} {name}, {pace}: {latency_figures(latencies)}", flush=True)
    finally:
        reference.stop()
    p99 = percentile(railyard.latencies, 0.99) / percentile(latencies, 0.99)
    print(
        f"{label:<10} railyard/{name}: full load {railyard.rate / full['rate']:.2f}x the rate "
        f"(intake alone {railyard.alone_rate / full['rate']:.2f}x), "
        f"p99 at {load.rate}/s {p99:.2f}x the latency",
        flush=True,
    )
    slower = min(railyard.rate, full["rate"])
    if load.rate > 0.9 * slower:  # past capacity a p99 measures the queue, not the server
        print(
            f"{label:<10} note: {load.rate}/s is near or past the full-load rate here ({slower:.0f}/s): "
            "that p99 is mostly queueing; take --rate lower on this machine",
            flush=True,
        )


async def pairs(
    label: str, database_url: str, workdir: Path, env: dict[str, str], load: Load, rounds: int
) -> None:
    """`rounds` rounds of full load, each on railyard (a fresh database, its worker running), then
    the gidgethub bot, then Probot (when installed), one right after the other: each round's
    ratios compare servers measured within seconds of each other, and their median is what a
    machine whose speed drifts over a minute cannot move much."""
    references = {"gidgethub bot": [sys.executable, str(ROOT / "bench" / "stateless_bot.py")]}
    if shutil.which("node") is not None and (PROBOT / "node_modules").is_dir():
        references["Probot"] = ["node", str(PROBOT / "index.js")]
    ratios: dict[str, list[float]] = {name: [] for name in references}
    for number in range(1, rounds + 1):
        fresh = f"{database_url}-round-{number}" if database_url.startswith("sqlite") else database_url
        if not database_url.startswith("sqlite"):
            database = Database(database_url)
            reset_schema(database)
            database.close()
        rates = {"railyard": await full_rate({**env, "DATABASE_URL": fresh}, workdir, load, None)}
        for name, command in references.items():
            rates[name] = await full_rate(env, workdir, load, command)
            ratios[name].append(rates["railyard"] / rates[name])
        line = ", ".join(f"{name} {rate:.0f}/s" for name, rate in rates.items())
        print(f"{label:<10} round {number}: {line}", flush=True)
    for name, values in ratios.items():
        listed = " ".join(f"{v:.2f}" for v in values)
        print(
            f"{label:<10} railyard/{name}, round by round: {listed}; median {statistics.median(values):.2f}x",
            flush=True,
        )


async def full_rate(env: dict[str, str], workdir: Path, load: Load, command: list[str] | None) -> float:
    """Acknowledged deliveries per second under full load from one server (railyard with its
    worker when `command` is None), started for it and stopped after."""
    server = ServerProcess(env=env, cwd=workdir, command=command)
    await server.start()
    try:
        return run_wrk(server.url, load.body_file, load.signature, load.seconds, load.connections)["rate"]
    finally:
        server.stop()


async def drain(label: str, database_url: str, workdir: Path, env: dict[str, str]) -> None:
    """The worker's drain rate on a fresh database: 5,000 deliveries over 50 ordering keys."""
    database = Database(database_url)
    if database.is_sqlite:
        Path(database_url.removeprefix("sqlite:///")).unlink()
        for suffix in ("-wal", "-shm"):
            Path(database_url.removeprefix("sqlite:///") + suffix).unlink(missing_ok=True)
    else:
        reset_schema(database)
    database.close()
    server = ServerProcess(env=env, cwd=workdir)
    await server.start()
    try:
        database = Database(database_url)
        deliveries = drain_deliveries(5000)
        started = time.perf_counter()
        for chunk in range(0, len(deliveries), 250):
            write_batch(database, deliveries[chunk : chunk + 250])
        async with aiohttp.ClientSession() as client:  # wake the worker
            await client.get(f"{server.url}/healthz")
        while queue_depth(database)[0]:
            await asyncio.sleep(0.05)
        elapsed = time.perf_counter() - started
        rate = len(deliveries) / elapsed
        print(
            f"{label:<10} worker drain: {len(deliveries)} deliveries in {elapsed:.1f}s = {rate:.0f}/s",
            flush=True,
        )
        database.close()
    finally:
        server.stop()


def main() -> None:
    """Run the benchmark on SQLite, and on PostgreSQL when a URL is given."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--postgres",
        help='a PostgreSQL URL (its public schema is reset!), or "private" (a throwaway cluster)',
    )
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rate", type=int, default=1000, help="deliveries per second in the fixed-rate part")
    parser.add_argument(
        "--rounds", type=int, default=0, help="then this many rounds of railyard and each reference in turn"
    )
    parser.add_argument("--connections", type=int, default=16, help="wrk's connections under full load")
    args = parser.parse_args()
    if args.rounds < 0:
        parser.error("--rounds must be 0 or more")
    if args.connections < 2:
        parser.error("--connections must be 2 or more (wrk's two threads each need one)")
    if shutil.which("wrk") is None:
        sys.exit("bench/intake.py needs wrk: apt-get install wrk")
    print(f"cores={os.cpu_count()}  python={sys.version.split()[0]}", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        sqlite = f"sqlite:///{folder}/intake.db"
        asyncio.run(
            bench("sqlite", sqlite, Path(folder), args.seconds, args.rate, args.rounds, args.connections)
        )
    if args.postgres:
        with postgres(args.postgres) as url, tempfile.TemporaryDirectory() as folder:
            asyncio.run(
                bench("postgresql", url, Path(folder), args.seconds, args.rate, args.rounds, args.connections)
            )


@contextlib.contextmanager
def postgres(url: str) -> Iterator[str]:
    """The URL given, its schema reset; or with "private", a throwaway cluster of our own."""
    if url != "private":
        database = Database(url)
        reset_schema(database)
        database.close()
        yield url
        return
    cluster = PrivateCluster()
    cluster.start()
    try:
        yield cluster.create_database("intake")
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
