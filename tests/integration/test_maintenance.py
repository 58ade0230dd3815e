"""Retention of stored payloads, and recovery of deliveries GitHub failed to make."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
import respx
from sqlalchemy import select

from app.github.client import GitHubClient
from app.runtime.maintenance import Maintenance, RecoveryPass, recover_missed_deliveries
from app.store import held as held_store
from app.store.api_answers import keep_answer, kept_answer
from app.store.budgets import budgets, spend
from app.store.database import Database
from app.store.held import held
from app.store.intake import IncomingDelivery, write_batch
from app.store.queue import deliveries
from app.store.retention import DAY, Retention, apply_retention, prune_held_observations
from handlers.errors import TransientError
from handlers.ports import KeptAnswer
from policies.budgets import Budget
from policies.rails import CheckObserved, DeploymentObserved
from tests.fakes import GITHUB_API, started_client

NOW = 1_800_000_000.0


def hold(database: Database, *args: Any) -> None:
    """Hold one observation in a transaction of its own."""
    with database.write() as connection:
        held_store.hold(connection, *args)


def held_for(database: Database, repository: str, subject: str) -> list[Any]:
    """The observations held under a subject."""
    with database.read() as connection:
        return held_store.held_for(connection, repository, subject)


def stored(delivery_id: str, received_at: float, status: str = "done") -> IncomingDelivery:
    """A stored delivery received at a given time."""
    return IncomingDelivery(
        delivery_id, "ping", None, None, None, None, status, "{}", 2, received_at, received_at
    )


def rows(database: Database) -> dict[str, str | None]:
    """delivery id -> payload (None once dropped)."""
    with database.read() as connection:
        return dict(connection.execute(select(deliveries.c.delivery_id, deliveries.c.payload)).all())


def test_payloads_go_after_7_days_and_delivery_ids_after_30(database: Database) -> None:
    """SPEC's retention: the payload is dropped at 7 days, the id kept until 30; pending is kept."""
    write_batch(
        database,
        [
            stored("fresh", NOW - 1 * DAY),
            stored("week-old", NOW - 8 * DAY),
            stored("month-old", NOW - 31 * DAY),
            stored("stuck", NOW - 31 * DAY, status="pending"),
        ],
    )
    assert apply_retention(database, NOW) == (1, 1)
    assert rows(database) == {"fresh": "{}", "week-old": None, "stuck": "{}"}


def check_at(sha: str) -> CheckObserved:
    """A completed check on a commit no PR has shown."""
    return CheckObserved(sha, "ci", "success", 1, datetime(2026, 11, 1, tzinfo=UTC))


def deployed(deployment_id: int, status: str, status_id: int) -> DeploymentObserved:
    """A production deployment status."""
    return DeploymentObserved(deployment_id, "production", f"sha-{deployment_id}", None, status, status_id)


def test_held_observations_expire_but_each_environments_latest_deployments_stay(database: Database) -> None:
    """After 14 days a held check goes, and so do old deployments, except the statuses of the
    latest deployment and of the latest successful one, which a ticket merging later needs."""
    hold(database, "acme/web", "check:old", check_at("old"), NOW - 15 * DAY)
    hold(database, "acme/web", "check:new", check_at("new"), NOW - 1 * DAY)
    for observation in (deployed(1, "success", 11), deployed(2, "success", 21), deployed(2, "failure", 22)):
        hold(database, "acme/web", "deployment:production", observation, NOW - 30 * DAY)
    hold(database, "acme/web", "deployment:production", deployed(3, "failure", 31), NOW - 20 * DAY)
    assert prune_held_observations(database, NOW, 14) == 2
    assert held_for(database, "acme/web", "check:old") == []
    assert held_for(database, "acme/web", "check:new") == [check_at("new")]
    kept = held_for(database, "acme/web", "deployment:production")
    assert kept == [deployed(2, "success", 21), deployed(2, "failure", 22), deployed(3, "failure", 31)]


async def test_the_maintenance_loop_expires_held_observations_at_its_retention(database: Database) -> None:
    """One round of the loop prunes with the configured held-observation retention."""
    hold(database, "acme/web", "check:old", check_at("old"), NOW - 3 * DAY)
    stop = asyncio.Event()
    loop = Maintenance(database, None, clock=lambda: NOW, retention=Retention(held_observation_days=2))
    task = asyncio.create_task(loop.run(stop))
    for _ in range(400):
        await asyncio.sleep(0.01)
        with database.read() as connection:
            if connection.execute(select(held.c.id)).first() is None:
                break
    stop.set()
    await task
    assert held_for(database, "acme/web", "check:old") == []


async def test_the_maintenance_loop_forgets_api_answers_after_a_day_and_budget_windows_once_over(
    database: Database,
) -> None:
    """An answer kept 25 hours ago and a budget window of three hours ago go; a fresh answer stays."""
    for key, hours in (("old", 25), ("fresh", 1)):
        with database.write() as connection:
            keep_answer(connection, KeptAnswer(42, key, "d", 200, {"applied": True}, at(NOW - hours * 3600)))
    spend(database, 42, Budget("commands:acme/web", 30, 3600.0), NOW - 3 * 3600)
    stop = asyncio.Event()
    task = asyncio.create_task(Maintenance(database, None, clock=lambda: NOW).run(stop))
    for _ in range(400):
        await asyncio.sleep(0.01)
        with database.read() as connection:
            if connection.execute(select(budgets.c.account_id)).first() is None:
                break
    stop.set()
    await task
    with database.read() as connection:
        assert kept_answer(connection, 42, "old") is None and kept_answer(connection, 42, "fresh") is not None
        assert connection.execute(select(budgets.c.account_id)).first() is None


def at(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


@pytest.fixture
async def github() -> AsyncIterator[GitHubClient]:
    """A started client against respx."""
    async with started_client() as client:
        yield client


def hook_delivery(id_: int, guid: str, status_code: int, redelivery: bool = False) -> dict[str, object]:
    """One item of GET /app/hook/deliveries, shaped like GitHub's."""
    return {
        "id": id_,
        "guid": guid,
        "delivered_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - 3600)),
        "redelivery": redelivery,
        "duration": 0.1,
        "status": "OK" if status_code < 300 else "Invalid HTTP Response: 503",
        "status_code": status_code,
        "event": "issue_comment",
        "action": "created",
        "installation_id": 7,
        "repository_id": 1,
    }


@respx.mock
async def test_failed_deliveries_that_never_arrived_are_redelivered_once(
    database: Database, github: GitHubClient
) -> None:
    """Only failed, unstored, not-later-successful deliveries are asked for again; pages are followed."""
    write_batch(database, [stored("guid-stored", NOW)])
    first_page = [
        hook_delivery(1, "guid-lost", 503),
        hook_delivery(2, "guid-stored", 503),
        hook_delivery(3, "guid-fine", 202),
    ]
    second_page = [hook_delivery(4, "guid-retried-ok", 502), hook_delivery(5, "guid-retried-ok", 202, True)]
    respx.get(f"{GITHUB_API}/app/hook/deliveries", params={"cursor": "page2"}).mock(
        return_value=httpx.Response(200, json=second_page)
    )
    respx.get(f"{GITHUB_API}/app/hook/deliveries").mock(
        return_value=httpx.Response(
            200,
            json=first_page,
            headers={"Link": f'<{GITHUB_API}/app/hook/deliveries?per_page=100&cursor=page2>; rel="next"'},
        )
    )
    redeliver = respx.post(url__regex=rf"{GITHUB_API}/app/hook/deliveries/\d+/attempts").mock(
        return_value=httpx.Response(202, json={})
    )
    assert await recover_missed_deliveries(database, github, NOW) == ["guid-lost"]
    assert [call.request.url.path for call in redeliver.calls] == ["/api/v3/app/hook/deliveries/1/attempts"]


@respx.mock
async def test_a_delivery_github_will_not_redeliver_does_not_stop_the_others(
    database: Database, github: GitHubClient
) -> None:
    """GitHub refuses to redeliver the first lost delivery (422): the second is still asked for, and only it
    is reported as asked; an item of the list that is not an object is passed over."""
    page = [hook_delivery(1, "guid-refused", 503), "not an object", hook_delivery(2, "guid-lost", 503)]
    respx.get(f"{GITHUB_API}/app/hook/deliveries").mock(return_value=httpx.Response(200, json=page))
    refused = respx.post(f"{GITHUB_API}/app/hook/deliveries/1/attempts").mock(
        return_value=httpx.Response(422, json={"message": "Validation Failed"})
    )
    asked = respx.post(f"{GITHUB_API}/app/hook/deliveries/2/attempts").mock(
        return_value=httpx.Response(202, json={})
    )

    assert await recover_missed_deliveries(database, github, NOW) == ["guid-lost"]
    assert refused.called and asked.called


def _listed(id_: int, guid: str, status_code: int, ago: float) -> dict[str, object]:
    """`hook_delivery`, delivered `ago` seconds before NOW."""
    item = hook_delivery(id_, guid, status_code)
    item["delivered_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - ago))
    return item


@respx.mock
async def test_a_503_behind_two_thousand_newer_deliveries_is_still_redelivered(
    database: Database, github: GitHubClient
) -> None:
    """One delivery got a 503 (the database was locked for a few seconds); in the quarter of an
    hour since, 2,100 more arrived (2.3 a second: a busy organization's check runs). GitHub
    lists its deliveries newest first, 100 a page; the lost one is on page 22, well inside the
    72 hours recovery looks back. However many rounds recovery runs, it must ask for it."""
    newer = [_listed(10_000 - n, f"guid-ok-{n}", 202, 0.4 * n) for n in range(2_100)]
    listed = [*newer, _listed(1, "guid-lost", 503, 900.0)]

    def page(request: httpx.Request) -> httpx.Response:
        start = int(request.url.params.get("cursor", "0"))
        items = listed[start : start + 100]
        headers = {}
        if start + 100 < len(listed):
            headers["Link"] = (
                f'<{GITHUB_API}/app/hook/deliveries?per_page=100&cursor={start + 100}>; rel="next"'
            )
        return httpx.Response(200, json=items, headers=headers)

    respx.get(f"{GITHUB_API}/app/hook/deliveries").mock(side_effect=page)
    redeliver = respx.post(url__regex=rf"{GITHUB_API}/app/hook/deliveries/\d+/attempts").mock(
        return_value=httpx.Response(202, json={})
    )
    asked: list[str] = []
    reading = RecoveryPass()  # kept between rounds, as `Maintenance` keeps it
    for round_ in range(3):  # three rounds, ten minutes apart
        asked += await recover_missed_deliveries(database, github, NOW + 600 * round_, reading=reading)
    assert "guid-lost" in asked
    assert [call.request.url.path for call in redeliver.calls] == ["/api/v3/app/hook/deliveries/1/attempts"]


@respx.mock
async def test_failures_a_round_could_not_ask_for_are_asked_for_in_a_later_round(
    database: Database, github: GitHubClient
) -> None:
    """The database was away for a moment a quarter of an hour ago: two deliveries got a 503.
    Since then 100 more arrived, so the two are on GitHub's second page. Recovery's round finds
    them, but GitHub answers its first redelivery with a 502 (it is away for a moment too):
    the round ends there, and `Maintenance` tries again ten minutes later. The two must still
    be asked for (SPEC: a 503 is "a failure that recovery redelivers"), as they were before
    rounds went on from where the last one stopped."""
    newer = [_listed(10_000 - n, f"guid-ok-{n}", 202, 60.0 + 10 * n) for n in range(100)]
    listed = [*newer, _listed(2, "guid-lost-a", 503, 1_200.0), _listed(1, "guid-lost-b", 503, 1_210.0)]

    def page(request: httpx.Request) -> httpx.Response:
        start = int(request.url.params.get("cursor", "0"))
        headers = {}
        if start + 100 < len(listed):
            headers["Link"] = (
                f'<{GITHUB_API}/app/hook/deliveries?per_page=100&cursor={start + 100}>; rel="next"'
            )
        return httpx.Response(200, json=listed[start : start + 100], headers=headers)

    answers = iter([httpx.Response(502, json={"message": "Server Error"})])

    def redelivered(request: httpx.Request) -> httpx.Response:
        return next(answers, httpx.Response(202, json={}))

    respx.get(f"{GITHUB_API}/app/hook/deliveries").mock(side_effect=page)
    redeliver = respx.post(url__regex=rf"{GITHUB_API}/app/hook/deliveries/\d+/attempts").mock(
        side_effect=redelivered
    )
    asked: list[str] = []
    reading = RecoveryPass()  # kept between rounds, as `Maintenance` keeps it
    for round_ in range(3):  # three rounds, ten minutes apart
        try:
            asked += await recover_missed_deliveries(database, github, NOW + 600 * round_, reading=reading)
        except TransientError:  # as `Maintenance` does: GitHub away, asked again next time
            continue
    assert redeliver.calls, "the round found the failures"
    assert sorted(asked) == ["guid-lost-a", "guid-lost-b"], [c.request.url.path for c in redeliver.calls]


@respx.mock
async def test_lost_deliveries_are_asked_for_in_the_order_github_first_sent_them(
    database: Database, github: GitHubClient
) -> None:
    """The database was away for twenty minutes; meanwhile an organization's owner suspended
    the app and, ten minutes later, unsuspended it: both `installation` deliveries got a 503.
    GitHub lists them newest first. Redelivered in that order, railyard receives (and so
    orders by its queue, `seq`) the unsuspend before the suspend, and records the installation
    suspended while GitHub says it is active. Each is a POST that GitHub acts on at once, so
    the order railyard asks in is the order they come back: oldest first."""
    listed = [
        _listed(3, "guid-ok", 202, 60.0),
        _listed(2, "guid-unsuspend", 503, 600.0),
        _listed(1, "guid-suspend", 503, 1_200.0),
    ]
    for item in listed:
        item["event"], item["action"] = "installation", None
    respx.get(f"{GITHUB_API}/app/hook/deliveries").mock(return_value=httpx.Response(200, json=listed))
    redeliver = respx.post(url__regex=rf"{GITHUB_API}/app/hook/deliveries/\d+/attempts").mock(
        return_value=httpx.Response(202, json={})
    )

    await recover_missed_deliveries(database, github, NOW)

    assert [call.request.url.path.split("/")[-2] for call in redeliver.calls] == ["1", "2"]
