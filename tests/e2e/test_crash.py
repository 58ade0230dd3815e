"""Kill the server with SIGKILL at random moments while GitHub keeps delivering: nothing
acknowledged is lost, and every acknowledged delivery is processed exactly once."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import aiohttp
from sqlalchemy import func, select

from app.store.database import Database
from app.store.installations import installation_repositories
from app.store.queue import deliveries, runs
from tests.fakes import ServerProcess, example, server_env, signed_headers

DELIVERIES = 1000
SENDERS = 8
INSTALLATION = 4242


def repository_added(number: int) -> bytes:
    """A real `installation_repositories.added` payload adding one repository of its own."""
    payload = json.loads(example("api.github.com", "installation_repositories", "01-added.json"))
    payload["installation"]["id"] = INSTALLATION
    payload["repositories_added"] = [{"id": number, "name": f"r{number}", "full_name": f"crash/r{number}"}]
    payload["repositories_removed"] = []
    return json.dumps(payload).encode()


async def send_until_answered(
    client: aiohttp.ClientSession, server: ServerProcess, number: int, acknowledged: dict[str, int]
) -> None:
    """Deliver like GitHub: on a refused connection or a 5xx, try the same delivery id again."""
    body, delivery_id = repository_added(number), f"crash-{number}"
    headers = signed_headers(body, "installation_repositories", delivery_id)
    while True:
        try:
            async with client.post(f"{server.url}/webhooks", data=body, headers=headers) as response:
                if response.status in (200, 202):
                    acknowledged[delivery_id] = response.status
                    return
        except (TimeoutError, aiohttp.ClientError):
            pass
        await asyncio.sleep(0.05)


async def killer(
    server: ServerProcess, done: asyncio.Event, acknowledged: dict[str, int], rng: random.Random
) -> int:
    """SIGKILL the server mid-stream and start it again; return how many kills.

    Kills are spaced by acknowledged deliveries (every 50 to 250, at random) rather than by
    time, so a faster server is killed just as often.
    """
    kills = 0
    threshold = rng.randint(50, 250)
    while not done.is_set():
        await asyncio.sleep(rng.uniform(0.0, 0.02))
        if len(acknowledged) < threshold:
            continue
        server.kill()
        kills += 1
        threshold = len(acknowledged) + rng.randint(50, 250)
        await server.start()
    return kills


async def test_sigkill_during_a_stream_of_deliveries_loses_nothing(tmp_path: Path) -> None:
    """Every delivery answered 2xx is stored and processed; its effect exists exactly once."""
    url = f"sqlite:///{tmp_path}/crash.db"
    # Nothing listens on the GitHub URL: recovery fails fast and is retried later.
    server = ServerProcess(env=server_env(url, "http://127.0.0.1:9"), cwd=tmp_path)
    await server.start()
    acknowledged: dict[str, int] = {}
    done = asyncio.Event()
    rng = random.Random(20261130)
    kill_task = asyncio.create_task(killer(server, done, acknowledged, rng))
    numbers = list(range(DELIVERIES))
    timeout = aiohttp.ClientTimeout(total=5)
    async with aiohttp.ClientSession(timeout=timeout) as client:

        async def sender(mine: list[int]) -> None:
            for number in mine:
                await send_until_answered(client, server, number, acknowledged)

        await asyncio.gather(*(sender(numbers[i::SENDERS]) for i in range(SENDERS)))
    done.set()
    kills = await kill_task
    await _wait_drained(url)
    server.stop()

    assert kills >= 3, "the test must actually kill the server"
    assert len(acknowledged) == DELIVERIES
    database = Database(url)
    with database.read() as connection:
        statuses = dict(
            connection.execute(select(deliveries.c.status, func.count()).group_by(deliveries.c.status)).all()
        )
        repositories = connection.execute(select(installation_repositories.c.repository)).scalars().all()
        completions = connection.execute(
            select(runs.c.delivery_seq, func.count())
            .where(runs.c.lease_kept.is_(True), runs.c.outcome == "done")
            .group_by(runs.c.delivery_seq)
        ).all()
    assert statuses == {"done": DELIVERIES}
    assert len(completions) == DELIVERIES and {count for _, count in completions} == {1}
    assert sorted(repositories) == sorted(f"crash/r{n}" for n in numbers)


async def _wait_drained(url: str, timeout: float = 60.0) -> None:
    database = Database(url)
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        with database.read() as connection:
            pending = connection.execute(
                select(func.count()).select_from(deliveries).where(deliveries.c.status == "pending")
            ).scalar_one()
        if not pending:
            return
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"{pending} deliveries still pending")
        await asyncio.sleep(0.1)
