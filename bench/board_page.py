"""The board page over HTTP: a signed-in GET of /tickets/{owner}/{repo} on a 10,000-ticket
repository on SQLite, through the real server (session cookie, access check, the listing's one
statement, attention codes, HTML), as p50 and p95 over `--runs` requests, for the unfiltered
board, a work-state filter, an attention filter and the second page.

The tickets are filled as `bench/board.py` fills them. Access is read from the GitHub stand-in
once at sign-in and then cached (re-checked every 5 minutes), so the figures are the page's own.

    python bench/board_page.py [--tickets 10000] [--runs 100]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp

from app.store.database import Database
from app.store.repositories import place
from app.web.page_views import PAGE_COSTS
from bench.board import OTHER, REPO, fill
from github_standin import StandinState, running_standin
from policies.budgets import Budget, WindowCounter
from support.servers import app_settings, running_server


async def timed(client: aiohttp.ClientSession, path: str, runs: int) -> tuple[float, float, int]:
    """p50 and p95 in ms of GET `path` (after one warm-up), and the page's size in bytes."""
    async with client.get(path) as response:
        assert response.status == 200, response.status
        size = len(await response.read())
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        async with client.get(path) as response:
            await response.read()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.95) - 1], size


async def run(tickets: int, runs: int) -> None:
    """Fill, start the server and the stand-in, sign in, measure each kind of board page."""
    with tempfile.TemporaryDirectory() as directory:
        url = f"sqlite:///{directory}/bench.db"
        database = Database(url)
        database.migrate()
        started = time.perf_counter()
        fill(database, REPO, tickets)
        fill(database, OTHER, tickets // 5)
        print(f"filled {tickets} + {tickets // 5} tickets in {time.perf_counter() - started:.1f} s")
        state = StandinState()
        state.add_installation(9, "bench")
        repository = state.add_repository(REPO)
        with database.write() as connection:  # the records are the stand-in's repository id's
            place(connection, repository.id, REPO, None, time.time())
        state.permissions[(REPO, "releaser")] = "read"
        state.oauth.approving = "releaser"
        async with running_standin(state) as standin:
            settings = app_settings(
                url,
                GITHUB_API_URL=standin.url,
                GITHUB_WEB_URL=standin.url,
                GITHUB_CLIENT_ID=state.oauth.client_id,
                GITHUB_CLIENT_SECRET=state.oauth.client_secret,
            )
            async with running_server(settings, run_worker=False) as server:
                # The page is measured, not its budget: one account asks for 400 pages in seconds.
                server.app[PAGE_COSTS].reads = WindowCounter(Budget("page reads", 10**9, 60.0))
                jar = aiohttp.CookieJar(unsafe=True)
                async with aiohttp.ClientSession(server.url, cookie_jar=jar) as client:
                    async with client.get("/tickets") as response:
                        assert response.status == 200
                    async with client.get(f"/tickets/{REPO}") as response:
                        older = (await response.text()).split('rel="next"')[0].rsplit('href="', 1)[1]
                    pages = {
                        "board": f"/tickets/{REPO}",
                        "work=claimed": f"/tickets/{REPO}?work=claimed",
                        "attention=awaiting_review": f"/tickets/{REPO}?attention=awaiting_review",
                        "second page": older.split('"')[0].replace("&amp;", "&"),
                    }
                    for name, path in pages.items():
                        p50, p95, size = await timed(client, path, runs)
                        print(f"{name:28} p50 {p50:7.1f} ms   p95 {p95:7.1f} ms   {size / 1024:6.1f} KiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tickets", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=100)
    arguments = parser.parse_args()
    asyncio.run(run(arguments.tickets, arguments.runs))


if __name__ == "__main__":
    main()
