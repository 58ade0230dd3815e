"""The real server on a loopback port: signed deliveries in, SPEC's answers out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.contracts.webhook_payloads import SUBSCRIBED_EVENTS, UNLISTED_EVENTS
from app.store.database import Database
from app.store.installations import active_repositories, status_of
from app.store.intake import Received, row_of, write_batch
from app.store.queue_admin import list_deliveries
from github_standin import repository_id
from support.world import REPO, World
from tests.fakes import FIXTURES, drained, example, process_intake_settings, running_server, signed_headers

PING = example("api.github.com", "ping", "01-none.json")
SUBSCRIBED = (*SUBSCRIBED_EVENTS, *UNLISTED_EVENTS)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A fresh SQLite file; the server migrates it at start."""
    return f"sqlite:///{tmp_path}/railyard.db"


async def test_a_signed_delivery_is_stored_and_acknowledged_with_202(sqlite_url: str) -> None:
    """202 once stored; the worker then processes it."""
    async with running_server(process_intake_settings(sqlite_url)) as server:
        response = await server.deliver("ping", PING, "delivery-1")
        assert response.status == 202
        await drained(Database(sqlite_url))
        stored = list_deliveries(Database(sqlite_url))
    assert [(d["delivery_id"], d["event"], d["status"]) for d in stored] == [("delivery-1", "ping", "done")]


async def test_the_same_delivery_id_twice_answers_200_and_stores_one_row(sqlite_url: str) -> None:
    """GitHub's redelivery of a stored delivery changes nothing."""
    async with running_server(process_intake_settings(sqlite_url)) as server:
        assert (await server.deliver("ping", PING, "same")).status == 202
        assert (await server.deliver("ping", PING, "same")).status == 200
    assert len(list_deliveries(Database(sqlite_url))) == 1


@pytest.mark.parametrize(
    ("case", "status"),
    [("wrong secret", 401), ("missing signature", 401), ("not sha256", 401), ("tampered body", 401)],
)
async def test_a_missing_or_wrong_signature_is_refused_with_401(
    sqlite_url: str, case: str, status: int
) -> None:
    """Nothing unsigned (or signed with another secret) is stored."""
    headers = signed_headers(PING, "ping", f"bad-{case}")
    body = PING
    if case == "wrong secret":
        headers = signed_headers(PING, "ping", "bad", secret="guess")
    elif case == "missing signature":
        del headers["X-Hub-Signature-256"]
    elif case == "not sha256":
        headers["X-Hub-Signature-256"] = headers["X-Hub-Signature-256"].replace("sha256=", "sha1=")
    else:
        body = PING.replace(b"Anything", b"Everything")
    async with running_server(process_intake_settings(sqlite_url)) as server:
        async with server.client.post("/webhooks", data=body, headers=headers) as response:
            assert response.status == status
            assert "signature" in (await response.json())["message"].lower()
    assert list_deliveries(Database(sqlite_url)) == []


async def test_any_of_several_secrets_is_accepted_for_rotation(sqlite_url: str) -> None:
    """WEBHOOK_SECRET may list the old and the new secret while they rotate."""
    settings = process_intake_settings(sqlite_url, WEBHOOK_SECRET="old-secret, new-secret")
    async with running_server(settings) as server:
        assert (await server.deliver("ping", PING, "old", secret="old-secret")).status == 202
        assert (await server.deliver("ping", PING, "new", secret="new-secret")).status == 202
        assert (await server.deliver("ping", PING, "other", secret="other-secret")).status == 401


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "not JSON"),
        (b"[1, 2, 3]", "not a JSON object"),
        (b"\xff\xfe", "not JSON"),
        (b"", "not JSON"),
        (b'{"a": ' + b"[" * 5000 + b"]" * 5000 + b"}", "nested too deeply"),
        (b'{"zen": ' + b"[" * 1100 + b"]" * 1100 + b"}", "nested too deeply"),
    ],
)
async def test_a_body_that_is_not_a_json_object_gets_400(sqlite_url: str, body: bytes, message: str) -> None:
    """Correctly signed garbage is a client error, never a 5xx, and is not stored."""
    async with running_server(process_intake_settings(sqlite_url)) as server:
        response = await server.deliver("ping", body, "garbage")
        assert response.status == 400
        assert message in await response.text()
    assert list_deliveries(Database(sqlite_url)) == []


@pytest.mark.parametrize("missing", ["X-GitHub-Event", "X-GitHub-Delivery"])
async def test_missing_github_headers_get_400(sqlite_url: str, missing: str) -> None:
    """A request without GitHub's headers is not a webhook delivery."""
    headers = signed_headers(PING, "ping", "no-headers")
    del headers[missing]
    async with running_server(process_intake_settings(sqlite_url)) as server:
        async with server.client.post("/webhooks", data=PING, headers=headers) as response:
            assert response.status == 400


async def test_a_body_over_25_mb_gets_413(sqlite_url: str) -> None:
    """GitHub caps payloads at 25 MB; anything larger is refused before it is read whole."""
    body = json.dumps({"zen": "x" * (25 * 1024 * 1024 + 10)}).encode()
    async with running_server(process_intake_settings(sqlite_url)) as server:
        response = await server.deliver("ping", body, "huge")
        assert response.status == 413


async def test_a_body_just_under_the_limit_is_stored(sqlite_url: str) -> None:
    """A 20 MB payload (aiohttp's default limit is 1 MiB) is accepted."""
    body = json.dumps({"zen": "x" * (20 * 1024 * 1024)}).encode()
    async with running_server(process_intake_settings(sqlite_url)) as server:
        assert (await server.deliver("ping", body, "big")).status == 202


async def test_an_event_the_app_does_not_handle_is_stored_as_ignored(sqlite_url: str) -> None:
    """202, and the row says `ignored`: nothing acknowledged is ever lost."""
    body = json.dumps({"action": "created", "starred_at": None}).encode()
    async with running_server(process_intake_settings(sqlite_url)) as server:
        assert (await server.deliver("star", body, "a-star")).status == 202
    [stored] = list_deliveries(Database(sqlite_url))
    assert (stored["event"], stored["status"]) == ("star", "ignored")


async def test_setup_mode_answers_503_and_stores_nothing(sqlite_url: str) -> None:
    """Without app credentials the server runs but refuses webhooks."""
    async with running_server(process_intake_settings(sqlite_url, APP_ID="")) as server:
        response = await server.deliver("ping", PING, "too-early")
        assert response.status == 503
        async with server.client.get("/healthz") as health:
            assert (await health.json())["mode"] == "setup"
    assert list_deliveries(Database(sqlite_url)) == []


async def test_healthz_reports_database_loops_and_queue(sqlite_url: str) -> None:
    """The health check says what an operator needs to know: the database, every loop, the queue."""
    async with running_server(process_intake_settings(sqlite_url)) as server:
        async with server.client.get("/healthz") as response:
            report = await response.json()
    assert response.status == 200
    assert report["status"] == "ok" and report["database"] == "ok"
    assert set(report["loops"]) == {"worker", "outbox", "housekeeping", "watchdog", "acceptance_rechecks"}
    assert all(loop["healthy"] for loop in report["loops"].values())
    assert report["queue"] == {"pending": 0, "lag_seconds": 0.0}


async def test_metrics_are_prometheus_text_behind_the_token(sqlite_url: str) -> None:
    """/metrics counts deliveries by event and outcome, and needs METRICS_TOKEN when set."""
    async with running_server(process_intake_settings(sqlite_url, METRICS_TOKEN="let-me-see")) as server:
        await server.deliver("ping", PING, "counted")
        await server.deliver("ping", PING, "counted")
        async with server.client.get("/metrics") as refused:
            assert refused.status == 401
        headers = {"Authorization": "Bearer let-me-see"}
        async with server.client.get("/metrics", headers=headers) as response:
            text = await response.text()
    assert 'railyard_webhook_deliveries_received_total{event="ping",outcome="stored"} 1.0' in text
    assert 'railyard_webhook_deliveries_received_total{event="ping",outcome="duplicate"} 1.0' in text
    assert "railyard_queue_depth" in text


def _examples() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("*/*/*.json") if p.parent.name in SUBSCRIBED)


async def test_every_real_example_of_the_subscribed_events_is_stored_and_dispatched(world: World) -> None:
    """Every payload in @octokit/webhooks-examples (github.com and GHES) goes through without error.

    The examples are moved to the stand-in's repository (installation events keep their own
    installation, so that an example `deleted` does not uninstall the app under test).
    """
    examples = _examples()
    assert len(examples) == 245  # 231, the 13 `repository` examples and the protection rule's
    for number, path in enumerate(examples):
        payload = json.loads(path.read_bytes())
        if not path.parent.name.startswith("installation"):
            payload["installation"] = {"id": 7}
            if isinstance(payload.get("repository"), dict):
                payload["repository"]["full_name"] = REPO
                payload["repository"]["id"] = repository_id(REPO)  # the stand-in's acme/web
        response = await world.server.deliver(
            path.parent.name, json.dumps(payload).encode(), f"example-{number}"
        )
        assert response.status == 202, path
    await world.settle()
    stored = list_deliveries(world.database, limit=1000)
    assert len(stored) == len(examples)
    assert {d["status"] for d in stored} <= {"done", "ignored"}, [
        d for d in stored if d["status"] == "failed"
    ]


async def test_uninstalling_stops_all_actions_and_keeps_the_records(sqlite_url: str) -> None:
    """After `installation.deleted`, that installation's deliveries are stored but not acted on."""
    created = json.loads(example("api.github.com", "installation", "02-created.json"))
    installation_id = created["installation"]["id"]
    deleted = {**created, "action": "deleted"}
    later = json.loads(example("api.github.com", "ping", "01-none.json"))
    later["installation"] = {"id": installation_id}
    async with running_server(process_intake_settings(sqlite_url)) as server:
        database = Database(sqlite_url)
        await server.deliver("installation", json.dumps(created).encode(), "installed")
        await drained(database)
        assert status_of(database, installation_id) == "active"
        with database.read() as connection:
            covered = active_repositories(connection, installation_id)
        assert covered == [r["full_name"].casefold() for r in created["repositories"]]
        await server.deliver("installation", json.dumps(deleted).encode(), "uninstalled")
        await drained(database)
        await server.deliver("ping", json.dumps(later).encode(), "after-uninstall")
        await drained(database)
    assert status_of(database, installation_id) == "deleted"
    statuses = {d["delivery_id"]: (d["status"], d["last_error"]) for d in list_deliveries(database)}
    assert statuses["after-uninstall"] == ("ignored", "installation removed or suspended")
    assert statuses["installed"][0] == "done"


async def test_a_delivery_received_after_an_unsuspend_is_acted_on(sqlite_url: str) -> None:
    """GitHub sends nothing of a suspended installation but its `installation` events: what
    arrives after `unsuspend` was sent after it, and must be acted on. With a backlog (the
    server was restarting, or busy), the `unsuspend` and the next delivery wait together; the
    later one must not be judged by the status from before the earlier one ran."""
    created = json.loads(example("api.github.com", "installation", "02-created.json"))
    installation_id = created["installation"]["id"]
    suspend = {**created, "action": "suspend"}
    unsuspend = {**created, "action": "unsuspend"}
    later = json.loads(PING)
    later["installation"] = {"id": installation_id}
    database = Database(sqlite_url)
    async with running_server(process_intake_settings(sqlite_url)) as server:
        await server.deliver("installation", json.dumps(created).encode(), "installed")
        await server.deliver("installation", json.dumps(suspend).encode(), "suspended")
        await drained(database)
    assert status_of(database, installation_id) == "suspended"
    # Received while the server was down (stored, acknowledged, not yet processed), in this order.
    backlog = [
        row_of(Received("unsuspended", "installation", True, 1.0), json.dumps(unsuspend).encode()),
        row_of(Received("after-unsuspend", "ping", True, 2.0), json.dumps(later).encode()),
    ]
    assert write_batch(database, backlog) == [True, True]
    async with running_server(process_intake_settings(sqlite_url)):
        await drained(database)
    assert status_of(database, installation_id) == "active"
    statuses = {d["delivery_id"]: (d["status"], d["last_error"]) for d in list_deliveries(database)}
    assert statuses["after-unsuspend"] == ("done", None)
