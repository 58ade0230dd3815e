"""Compare calls per deployment status, with many merged tickets.

Every deployment status is checked against each merged ticket (one deployment moves every
ticket it contains; a rollback takes deployed tickets back). This bench merges `--tickets`
tickets through the real handlers (SQLite, the GitHub stand-in on loopback), then sends a
history of production deployments and prints, for each status, how many compare calls
GitHub received and how long the handler took:

1. the first deployment containing every merge (nothing known yet: one compare per ticket);
2. a newer commit deployed (in_progress, then success);
3. a deployment of a newer commit that fails;
4. a rollback to a commit without the merges;
5. the newer commit deployed again.

    python bench/deployments.py [--tickets 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import structlog

from app.bootstrap import Shell, github_client, wire
from app.runtime.metrics import Metrics
from github_standin import StandinState, running_standin
from handlers import ROUTER
from handlers.routing import WebhookEvent
from policies.commands import Claim, Publish
from policies.model import TicketKey
from support.comments import REQUESTER, RUNNER, Comments
from support.databases import sqlite_database
from support.servers import app_settings
from support.world import REPO, event_payload, pull_request_payload

FIRST, SECOND, THIRD, OLD = "a1" * 20, "a2" * 20, "a3" * 20, "0b" * 20
CONFIG = "deployments:\n  environments: [production]\n"


def merge_of(number: int) -> str:
    """The merge commit of ticket `number`'s PR."""
    return f"{number:08x}".ljust(40, "d")


def seed(state: StandinState, tickets: int) -> None:
    """acme/web, and the commit graph: every merge is in FIRST, SECOND and THIRD, none in OLD."""
    state.add_installation(7, "acme")
    repository = state.add_repository(REPO, files={".github/railyard.yml": CONFIG})
    graph = repository.compare
    for number in range(1, tickets + 1):
        for deployed in (FIRST, SECOND, THIRD):
            graph[(merge_of(number), deployed)] = "ahead"
        graph[(merge_of(number), OLD)] = "behind"
    graph.update({(FIRST, SECOND): "ahead", (SECOND, THIRD): "ahead", (FIRST, THIRD): "ahead"})
    graph.update({(FIRST, OLD): "behind", (SECOND, OLD): "behind", (THIRD, OLD): "behind"})
    graph.update({(OLD, FIRST): "ahead", (OLD, SECOND): "ahead", (OLD, THIRD): "ahead"})


async def deliver(services: Shell, event: str, payload: dict[str, Any], delivery_id: str) -> float:
    """Run the handlers for one event as the worker does; the seconds it took."""
    delivery = WebhookEvent(delivery_id, event, payload.get("action"), 7, json.loads(json.dumps(payload)))
    started = time.perf_counter()
    for handler in ROUTER.handlers_for(event, delivery.action):
        await handler(delivery, services.ports)
    return time.perf_counter() - started


async def merge_tickets(services: Shell, tickets: int) -> None:
    """Publish, claim and merge (through a `closed` pull_request event) each ticket."""
    comments = Comments()
    for number in range(1, tickets + 1):
        key = TicketKey(REPO, number)
        services.tickets.execute(key, Publish("Bench"), comments.context(REQUESTER))
        services.tickets.execute(key, Claim(), comments.context(RUNNER))
        closed = pull_request_payload(
            "closed", 100_000 + number, f"Fixes #{number}", merged=True, state="closed",
            ref=f"agent/{number}", head=f"{number:08x}".ljust(40, "c"),
        )  # fmt: skip
        closed["pull_request"]["merge_commit_sha"] = merge_of(number)
        await deliver(services, "pull_request", closed, f"merge-{number}")


def status(deployment_id: int, sha: str, state: str, status_id: int) -> dict[str, Any]:
    """A deployment_status payload for production."""
    payload = event_payload("deployment_status", "01-created.json")
    payload["deployment"].update({"id": deployment_id, "sha": sha, "environment": "production"})
    payload["deployment_status"].update({"id": status_id, "state": state, "environment": "production"})
    return payload


HISTORY = [
    ("first deployment, success", status(900, FIRST, "success", 1)),
    ("newer commit, in_progress", status(901, SECOND, "in_progress", 2)),
    ("newer commit, success", status(901, SECOND, "success", 3)),
    ("newer commit again, failure", status(902, THIRD, "failure", 4)),
    ("rollback to an old commit", status(903, OLD, "success", 5)),
    ("newer commit redeployed", status(904, THIRD, "success", 6)),
]


async def main(tickets: int) -> None:
    """Merge the tickets, send the deployment history, print compare calls per status."""
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    state = StandinState()
    seed(state, tickets)
    with tempfile.TemporaryDirectory() as directory:
        database = sqlite_database(Path(directory) / "bench.db")
        async with running_standin(state) as standin:
            settings = app_settings(database.url, GITHUB_API_URL=standin.url, APP_ID="1")
            github = github_client(settings, database, Metrics())
            await github.start()
            services = wire(database, github=github, app_id=1)
            started = time.perf_counter()
            await merge_tickets(services, tickets)
            print(f"{tickets} tickets merged in {time.perf_counter() - started:.1f} s")
            print(f"{'deployment status':32} {'compare calls':>14} {'seconds':>8}")
            for n, (label, payload) in enumerate(HISTORY):
                before = len(state.calls_to("GET", f"/repos/{REPO}/compare/"))
                seconds = await deliver(services, "deployment_status", payload, f"status-{n}")
                calls = len(state.calls_to("GET", f"/repos/{REPO}/compare/")) - before
                print(f"{label:32} {calls:>14} {seconds:>8.2f}")
            deployed = sum(
                services.tickets.load(TicketKey(REPO, n)).rails.deployment.value == "deployed"
                for n in range(1, tickets + 1)
            )
            print(f"tickets deployed at the end: {deployed} of {tickets}")
            await github.close()
        database.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tickets", type=int, default=1000)
    asyncio.run(main(parser.parse_args().tickets))
