"""What an event railyard ignores costs: CPU per `check_run` delivery for a pull request that
links no ticket, from the request to the delivery marked processed.

Starts, one after the other, on a fresh SQLite database each (fsync on):

1. the stateless bot (`bench/stateless_bot.py`: verify the signature, parse, answer 202);
2. railyard's intake alone (`bench/intake_alone.py`: the same server, no worker);
3. `railyard serve` as shipped (intake, worker, outbox in one process, and on SQLite the
   intake's writer process, whose CPU is counted with the server's);

and posts each the same `--count` signed `check_run.completed` deliveries (a real payload from
`@octokit/webhooks-examples`, each with its own delivery id; the repository has no tickets, so
the check links none; all of one head commit, or spread over `--commits` commits: a storm
across many pull requests, as many ordering keys) with `--concurrency` requests in flight, then
waits until railyard has processed them all. Prints the CPU milliseconds per delivery each
process used (from /proc), and railyard's processing alone (serve less intake alone). No GitHub
call is expected: the API URL points at a closed port, and a delivery that needed GitHub would
be retried, not done.

    python bench/ignored_events.py [--count 2000] [--concurrency 8] [--commits 1]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiohttp

from app.store.database import Database
from app.store.intake import sign
from app.store.queue import queue_depth
from bench.scale_backlog import tree_cpu_seconds
from support.payloads import example
from support.servers import WEBHOOK_SECRET, ServerProcess, private_key_pem


def check_run_payloads(commits: int) -> list[bytes]:
    """Real `check_run.completed` payloads whose pull requests link no railyard ticket, one per
    head commit (each commit's check runs are one ordering key)."""
    raw = example("api.github.com", "check_run", "02-completed.json")
    if commits == 1:
        return [raw]
    payload, out = json.loads(raw), []
    for number in range(commits):
        sha = hashlib.sha1(f"storm-{number}".encode()).hexdigest()  # noqa: S324 - a commit id, not a secret
        payload["check_run"]["head_sha"] = payload["check_run"]["check_suite"]["head_sha"] = sha
        out.append(json.dumps(payload).encode())
    return out


async def post_all(url: str, bodies: list[bytes], count: int, concurrency: int) -> int:
    """Post `count` deliveries, the bodies in turn, `concurrency` at a time; how many were acknowledged."""
    signed = [(body, sign(body, WEBHOOK_SECRET.encode())) for body in bodies]
    headers = {"Content-Type": "application/json", "X-GitHub-Event": "check_run"}
    acknowledged = 0
    queue: asyncio.Queue[int] = asyncio.Queue()
    for number in range(count):
        queue.put_nowait(number)

    async def sender(session: aiohttp.ClientSession) -> None:
        nonlocal acknowledged
        while not queue.empty():
            body, signature = signed[queue.get_nowait() % len(signed)]
            sent = {**headers, "X-Hub-Signature-256": signature, "X-GitHub-Delivery": str(uuid.uuid4())}
            async with session.post(f"{url}/webhooks", data=body, headers=sent) as response:
                await response.read()
                acknowledged += response.status < 300

    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(sender(session) for _ in range(concurrency)))
    return acknowledged


async def measure(
    label: str,
    command: list[str] | None,
    folder: Path,
    bodies: list[bytes],
    count: int,
    concurrency: int,
    processed: bool,
) -> float:
    """CPU ms per delivery of one server process (and its intake writer process), from the first
    request until it is done."""
    url = f"sqlite:///{folder}/{label}.db"
    env = {
        "DATABASE_URL": url,
        "APP_ID": "1",
        "PRIVATE_KEY": private_key_pem(),
        "WEBHOOK_SECRET": WEBHOOK_SECRET,
        "GITHUB_API_URL": "http://127.0.0.1:9",
    }
    server = ServerProcess(env=env, cwd=folder, command=command)
    await server.start()
    assert server.process is not None
    try:
        await asyncio.sleep(1.0)  # past the start-up's own work
        before, started = tree_cpu_seconds(server.process.pid), time.perf_counter()
        acknowledged = await post_all(server.url, bodies, count, concurrency)
        if processed:
            database = Database(url)
            while (await asyncio.to_thread(queue_depth, database))[0]:
                await asyncio.sleep(0.02)
            database.close()
        used, elapsed = tree_cpu_seconds(server.process.pid) - before, time.perf_counter() - started
    finally:
        server.stop()
    per = 1000 * used / count
    print(
        f"  {label:<13} {acknowledged}/{count} acknowledged in {elapsed:.1f} s; "
        f"{used:.2f} CPU s = {per:.2f} ms per delivery",
        flush=True,
    )
    return per


async def main(count: int, concurrency: int, commits: int) -> None:
    """The three processes, each on its own database; the figures and their differences."""
    python = sys.executable
    print(
        f"cores={os.cpu_count()} python={sys.version.split()[0]} count={count} "
        f"concurrency={concurrency} commits={commits}"
    )
    bodies = check_run_payloads(commits)
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        bot_command = [python, str(ROOT / "bench" / "stateless_bot.py")]
        bot = await measure("stateless", bot_command, base, bodies, count, concurrency, False)
        alone_command = [python, str(ROOT / "bench" / "intake_alone.py")]
        alone = await measure("intake alone", alone_command, base, bodies, count, concurrency, False)
        serve = await measure("railyard", None, base, bodies, count, concurrency, True)
    print(
        f"  railyard {serve:.2f} ms per ignored delivery, {serve / bot:.1f}x the stateless bot's "
        f"{bot:.2f} ms; the intake {alone:.2f} ms, the processing {serve - alone:.2f} ms",
        flush=True,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument(
        "--commits", type=int, default=1, help="head commits the check runs spread over (ordering keys)"
    )
    arguments = parser.parse_args()
    asyncio.run(main(arguments.count, arguments.concurrency, arguments.commits))
