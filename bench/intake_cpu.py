"""Where the intake's CPU goes under full load, process by process, beside the gidgethub bot.

`bench/intake.py` measures rates; this says what each delivery costs whom. For `--rounds`
rounds, one right after the other on a fresh SQLite database each: `railyard serve` (its worker
running, its intake's writer process on SQLite), then the stateless gidgethub bot
(`bench/stateless_bot.py`), each under wrk's full load (`--connections`, `--seconds`, the
13 KB signed `issue_comment` of `bench/intake.py`). For each it prints the rate and the CPU
milliseconds per acknowledged delivery of each of its processes (from /proc: the server, and
railyard's writer process apart), and wrk's own (its rusage). Medians close the run.

A server whose processes add up to less than a core each, with wrk using little, is waiting on
something (a commit's round trip), not computing: its rate then moves with `--connections`.

    python bench/intake_cpu.py [--rounds 3] [--seconds 6] [--connections 16]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.store.intake import sign
from bench.intake import comment_payload, run_wrk
from bench.scale_backlog import cpu_seconds
from support.servers import WEBHOOK_SECRET, ServerProcess, private_key_pem

BOT = [sys.executable, str(ROOT / "bench" / "stateless_bot.py")]


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


async def one(
    folder: Path, name: str, command: list[str] | None, seconds: int, connections: int
) -> list[float]:
    """[rate, CPU ms per delivery of each process..., wrk's] for one server under full load."""
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
        run_wrk(server.url, body_file, signature, 1, connections)  # warm: imports, first statements
        pids = _processes(server.process.pid)
        before, wrk_before = [cpu_seconds(pid) for pid in pids], _wrk_seconds()
        rate = run_wrk(server.url, body_file, signature, seconds, connections)["rate"]
        after, wrk_after = [cpu_seconds(pid) for pid in pids], _wrk_seconds()
    finally:
        server.stop()
    deliveries = rate * seconds
    per = [1000 * (b - a) / deliveries for a, b in zip(before, after, strict=True)]
    return [rate, *per, 1000 * (wrk_after - wrk_before) / deliveries]


async def main(rounds: int, seconds: int, connections: int) -> None:
    figures: dict[str, list[list[float]]] = {"railyard": [], "gidgethub bot": []}
    with tempfile.TemporaryDirectory() as folder:
        for number in range(1, rounds + 1):
            for name, command in (("railyard", None), ("gidgethub bot", BOT)):
                got = await one(Path(folder), f"{name.split()[0]}-{number}", command, seconds, connections)
                figures[name].append(got)
                print(f"round {number} {name:<14} {_line(got)}", flush=True)
    medians = {
        name: [statistics.median(column) for column in zip(*rows, strict=True)]
        for name, rows in figures.items()
    }
    for name, row in medians.items():
        print(f"median  {name:<14} {_line(row)}", flush=True)
    ratio = medians["railyard"][0] / medians["gidgethub bot"][0]
    print(f"railyard/gidgethub bot: {ratio:.2f}x the rate at {connections} connections", flush=True)


def _line(figures: list[float]) -> str:
    """A server's rate and CPU ms per delivery: the server, its writer process when it has one, wrk."""
    rate, *processes, wrk = figures
    named = ["server", "writer process"][: len(processes)]
    split = ", ".join(f"{label} {value:.3f}" for label, value in zip(named, processes, strict=True))
    return f"{rate:7.0f}/s; CPU ms per delivery: {split}, in all {sum(processes):.3f}; wrk {wrk:.3f}"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=6)
    parser.add_argument("--connections", type=int, default=16)
    args = parser.parse_args()
    if args.rounds < 1 or args.seconds < 1 or args.connections < 2:
        parser.error("--rounds and --seconds must be 1 or more, --connections 2 or more")
    asyncio.run(main(args.rounds, args.seconds, args.connections))
