"""Where the intake's CPU goes under full load, process by process, beside the gidgethub bot.

`bench/intake.py` measures rates; this says what each delivery costs whom. For `--rounds`
rounds, one right after the other on a fresh SQLite database each: `railyard serve` (its worker
running, its intake's writer process on SQLite), then the stateless gidgethub bot
(`bench/stateless_bot.py`), then Probot when `make bench-probot` has installed it, each under
full load (`--connections`, `--seconds`, the 13 KB signed `issue_comment` of
`bench/intake.py`). For each it prints the rate and the CPU milliseconds per acknowledged
delivery of each of its processes (from /proc: the server, and railyard's writer process
apart), and the load generator's own. Medians close the run.

The load generator (`--client`) changes the ratio, so both are here:
- `wrk` (the default): C, about 0.03 ms of CPU a request, so the servers have most of the
  machine's two cores;
- `python`: an aiohttp client in this process, `--connections` requests in flight, as a test
  harness written in Python loads a server. It takes 0.13 to 0.2 ms of CPU a request, most of
  a core, and the servers share what is left.

A server whose processes add up to less than a core each, with the client using little, is
waiting on something (a commit's round trip), not computing: its rate then moves with
`--connections`.

    python bench/intake_cpu.py [--rounds 3] [--seconds 6] [--connections 16] [--client wrk|python]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.store.intake import sign
from bench.intake import PROBOT, comment_payload, post_comment, run_wrk
from bench.scale_backlog import cpu_seconds
from support.servers import WEBHOOK_SECRET, ServerProcess, private_key_pem

BOT = [sys.executable, str(ROOT / "bench" / "stateless_bot.py")]
PROBOT_COMMAND = ["node", str(PROBOT / "index.js")]


def _processes(pid: int) -> list[int]:
    """The server and the live processes it started (railyard's intake writer, on SQLite)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except FileNotFoundError:
        children = []
    return [pid, *(int(child) for child in children)]


def _wrk_seconds() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


async def python_load(url: str, body: bytes, signature: str, seconds: float, connections: int) -> float:
    """Full load from an aiohttp client in this process: `connections` requests in flight, each
    sent as the last one's answer is read, for `seconds`; acknowledged deliveries per second."""
    done = 0
    stop = time.perf_counter() + seconds
    connector = aiohttp.TCPConnector(limit=connections)
    async with aiohttp.ClientSession(connector=connector) as client:

        async def sender(number: int) -> None:
            nonlocal done
            sent = 0
            while time.perf_counter() < stop:
                sent += 1
                await post_comment(client, url, body, signature, f"python-{time.time_ns()}-{number}-{sent}")
                done += 1

        await asyncio.gather(*(sender(number) for number in range(connections)))
    return done / seconds


async def _full_load(
    client: str, url: str, body_file: Path, signature: str, seconds: int, connections: int
) -> tuple[float, float]:
    """(acknowledged deliveries a second, the load generator's CPU seconds) under full load."""
    if client == "python":
        started = time.process_time()
        rate = await python_load(url, body_file.read_bytes(), signature, seconds, connections)
        return rate, time.process_time() - started
    started = _wrk_seconds()
    rate = run_wrk(url, body_file, signature, seconds, connections)["rate"]
    return rate, _wrk_seconds() - started


async def one(
    folder: Path, name: str, command: list[str] | None, seconds: int, connections: int, client: str = "wrk"
) -> list[float]:
    """[rate, CPU ms per delivery of each process..., the client's] for one server under full load."""
    env = {
        "DATABASE_URL": f"sqlite:///{folder}/{name}.db",
        "APP_ID": "1",
        "PRIVATE_KEY": private_key_pem(),
        "WEBHOOK_SECRET": WEBHOOK_SECRET,
        "GITHUB_API_URL": "http://127.0.0.1:9",
    }
    body = comment_payload()
    body_file = folder / "comment.json"
    body_file.write_bytes(body)
    signature = sign(body, WEBHOOK_SECRET.encode())
    server = ServerProcess(env=env, cwd=folder, command=command)
    await server.start()
    assert server.process is not None
    try:
        await _full_load(
            client, server.url, body_file, signature, 1, connections
        )  # warm: imports, first statements
        pids = _processes(server.process.pid)
        before = [cpu_seconds(pid) for pid in pids]
        rate, client_seconds = await _full_load(
            client, server.url, body_file, signature, seconds, connections
        )
        after = [cpu_seconds(pid) for pid in pids]
    finally:
        server.stop()
    deliveries = rate * seconds
    per = [1000 * (b - a) / deliveries for a, b in zip(before, after, strict=True)]
    return [rate, *per, 1000 * client_seconds / deliveries]


async def main(rounds: int, seconds: int, connections: int, client: str) -> None:
    servers: dict[str, list[str] | None] = {"railyard": None, "gidgethub bot": BOT}
    if shutil.which("node") is not None and (PROBOT / "node_modules").is_dir():
        servers["Probot"] = PROBOT_COMMAND
    else:
        print("Probot: not installed, left out (`make bench-probot` installs it)", flush=True)
    figures: dict[str, list[list[float]]] = {name: [] for name in servers}
    with tempfile.TemporaryDirectory() as folder:
        for number in range(1, rounds + 1):
            for name, command in servers.items():
                label = f"{name.split()[0].lower()}-{number}"
                got = await one(Path(folder), label, command, seconds, connections, client)
                figures[name].append(got)
                print(f"round {number} {name:<14} {_line(got, client)}", flush=True)
    medians = {
        name: [statistics.median(column) for column in zip(*rows, strict=True)]
        for name, rows in figures.items()
    }
    for name, row in medians.items():
        print(f"median  {name:<14} {_line(row, client)}", flush=True)
    for name in list(servers)[1:]:
        ratio = medians["railyard"][0] / medians[name][0]
        print(f"railyard/{name}: {ratio:.2f}x the rate at {connections} connections ({client})", flush=True)


def _line(figures: list[float], client: str) -> str:
    """A server's rate and CPU ms per delivery: the server, its writer process when it has one,
    the load generator."""
    rate, *processes, load = figures
    named = ["server", "writer process"][: len(processes)]
    split = ", ".join(f"{label} {value:.3f}" for label, value in zip(named, processes, strict=True))
    return f"{rate:7.0f}/s; CPU ms per delivery: {split}, in all {sum(processes):.3f}; {client} {load:.3f}"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=6)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--client", choices=("wrk", "python"), default="wrk")
    args = parser.parse_args()
    if args.rounds < 1 or args.seconds < 1 or args.connections < 2:
        parser.error("--rounds and --seconds must be 1 or more, --connections 2 or more")
    asyncio.run(main(args.rounds, args.seconds, args.connections, args.client))
