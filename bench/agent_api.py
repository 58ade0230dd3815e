"""The agent API's throughput on SQLite, beside a stateless reference in the same run, and the
GitHub calls one API command costs.

Runs the real server (worker and outbox inside, SQLite) against the in-process GitHub stand-in
on loopback, publishes one ticket, then for `--seconds` each, with `--clients` concurrent
clients, measures answers per second for:

- `GET /api/v1/repos/{repo}/tickets/{n}`: token checked with GitHub (`GET /user`, a 304 after
  the first), repository read checked (`GET /repos/{repo}`, a 304), the ticket read;
- a replayed `POST .../commands` (same Idempotency-Key and body): the same two checks, then the
  kept answer;
- the references: a stateless aiohttp handler on its own loopback port in this process, which
  answers a fixed JSON body (what any bot's HTTP path costs here, on this machine, now); and the
  two stand-in calls one API read waits on (`GET /user` and `GET /repos/{repo}`, both 304), made
  back to back, so what is left of an API answer is railyard's own work.

Then one fresh `/claim` through the API, with the stand-in's record of the GitHub calls it made
(counted against the rate limit, 304s, writes).

    python bench/agent_api.py [--seconds 5] [--clients 8]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiohttp
import httpx
from aiohttp import web

from app.cli.processes import _event_loop_policy
from github_standin import running_standin
from support.servers import app_settings, running_server
from support.world import REPO, World, standin_state

TICKETS = f"/api/v1/repos/{REPO}/tickets"


async def rate(
    session: aiohttp.ClientSession, request: Callable[[], Awaitable[int]], seconds: float, clients: int
) -> tuple[float, Counter[int]]:
    """Answers per second over `seconds` with `clients` concurrent loops, and the statuses seen."""
    statuses: Counter[int] = Counter()
    deadline = time.perf_counter() + seconds

    async def loop() -> None:
        while time.perf_counter() < deadline:
            statuses[await request()] += 1

    started = time.perf_counter()
    await asyncio.gather(*(loop() for _ in range(clients)))
    return sum(statuses.values()) / (time.perf_counter() - started), statuses


async def reference_server() -> tuple[web.AppRunner, str]:
    """A stateless aiohttp app answering a fixed JSON body: the floor of an HTTP answer here."""

    async def answer(request: web.Request) -> web.Response:
        return web.json_response({"ticket": f"{REPO}#12", "work": "open"})

    app = web.Application()
    app.router.add_get("/ticket", answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"


async def main(seconds: float, clients: int) -> None:
    state = standin_state()
    async with running_standin(state) as standin:
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite:///{tmp}/railyard.db"
            # Throughput, not the per-account limit: one reader's 600 reads a minute would cap it.
            settings = app_settings(
                url, GITHUB_API_URL=standin.url, APP_ID="1", API_READS_PER_MINUTE="10000000"
            )
            async with running_server(settings, outbox_spacing=0.0) as server:
                from app.store.database import Database

                world = World(server, state, Database(url))
                await world.say("rachel", "/publish")
                await world.say("rachel", "/publish", number=40)
                rita = state.oauth.issue_token("rita", state.now()).token
                cody = state.oauth.issue_token("cody", state.now()).token
                await measure(world, rita, cody, seconds, clients, standin.url)


async def measure(
    world: World, reader: str, runner: str, seconds: float, clients: int, standin_url: str
) -> None:
    client = world.server.client
    read_headers = {"Authorization": f"Bearer {reader}"}
    replay_headers = {"Authorization": f"Bearer {runner}", "Idempotency-Key": "bench-replay"}
    first = await client.post(f"{TICKETS}/12/commands", json={"command": "/claim"}, headers=replay_headers)
    assert first.status == 200, await first.text()

    async def get_ticket() -> int:
        async with client.get(f"{TICKETS}/12", headers=read_headers) as response:
            await response.read()
            return response.status

    async def replay() -> int:
        path = f"{TICKETS}/12/commands"
        async with client.post(path, json={"command": "/claim"}, headers=replay_headers) as response:
            await response.read()
            return response.status

    runner_app, reference_url = await reference_server()
    etags: dict[str, str] = {}
    try:
        plain, gh = aiohttp.ClientSession(reference_url), httpx.AsyncClient(base_url=standin_url)
        async with plain, gh:

            async def reference() -> int:
                async with plain.get("/ticket") as response:
                    await response.read()
                    return response.status

            async def standin_pair() -> int:
                status = 0
                for path in ("/user", f"/repos/{REPO}"):
                    headers = {"Authorization": f"Bearer {reader}", "If-None-Match": etags.get(path, "")}
                    answer = await gh.get(path, headers=headers)
                    etags.setdefault(path, answer.headers.get("etag", ""))
                    status = max(status, answer.status_code)
                return status

            results = {}
            for name, request in [
                ("reference", reference),
                ("standin×2", standin_pair),
                ("get_ticket", get_ticket),
                ("replay", replay),
            ]:
                results[name] = await rate(client, request, seconds, clients)
    finally:
        await runner_app.cleanup()
    base, pair = results["reference"][0], results["standin×2"][0]
    print(f"agent API on SQLite, {clients} concurrent clients, {seconds:.0f} s each")
    for name, (per_second, statuses) in results.items():
        ratio = "" if name == "reference" else f"  {per_second / base:.3f}x the stateless reference"
        if name in ("get_ticket", "replay"):
            ratio += f", {per_second / pair:.2f}x the two stand-in calls alone"
        print(f"  {name:<11} {per_second:8.0f} answers/s  statuses {dict(statuses)}{ratio}")
    await one_command_cost(world, runner)


async def one_command_cost(world: World, token: str) -> None:
    """The GitHub calls one fresh API command makes (its token already checked once before)."""
    state = world.github
    before = len(state.calls)
    headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": uuid.uuid4().hex}
    response = await world.server.client.post(
        f"{TICKETS}/40/commands", json={"command": "/claim"}, headers=headers
    )
    assert response.status == 200, await response.text()
    await world.settle()
    calls = state.calls[before:]
    not_modified = [c for c in calls if c.status == 304]
    writes = [c for c in calls if c.method in ("POST", "PATCH", "PUT") and c.path != "/graphql"]
    counted = [c for c in calls if c.status != 304]
    print("one /claim through the API (the request, then the outbox's writes):")
    print(f"  {len(calls)} GitHub calls: {len(counted)} counted against the rate limit,")
    print(f"  {len(not_modified)} answered 304 (free), {len(writes)} of them writes")
    for call in calls:
        print(f"    {call.method:<5} {call.status} {call.path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=8)
    arguments = parser.parse_args()
    _event_loop_policy()  # uvloop, as `railyard serve` runs
    asyncio.run(main(arguments.seconds, arguments.clients))
