"""The webhook door through the real server: what a signed body under a false event header,
unsigned noise, a compressed body and an unavailable database can and cannot do."""

from __future__ import annotations

import asyncio
import functools
import gzip
import json
import sqlite3
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import compression_utils
from sqlalchemy import text
from structlog.testing import capture_logs

from app.store.database import Database
from app.store.installations import status_of
from app.store.queue_admin import list_deliveries, requeue
from app.web.server import WORKER
from tests.fakes import drained, example, process_intake_settings, running_server, signed_headers

PING = example("api.github.com", "ping", "01-none.json")


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A fresh SQLite file; the server migrates it at start."""
    return f"sqlite:///{tmp_path}/railyard.db"


def _installed() -> tuple[bytes, int]:
    created = json.loads(example("api.github.com", "installation", "02-created.json"))
    return json.dumps(created).encode(), created["installation"]["id"]


async def test_a_comment_payload_sent_as_an_installation_event_changes_nothing(sqlite_url: str) -> None:
    """A signed `issue_comment.deleted` body replayed as `installation` is stored rejected, never run."""
    created, installation_id = _installed()
    comment = json.loads(example("api.github.com", "issue_comment", "06-deleted.json"))
    comment["installation"] = {"id": installation_id, "node_id": "MDIz"}
    assert comment["action"] == "deleted"
    replayed = json.dumps(comment).encode()
    database = Database(sqlite_url)
    async with running_server(process_intake_settings(sqlite_url)) as server:
        assert (await server.deliver("installation", created, "installed")).status == 202
        await drained(database)
        response = await server.deliver("installation", replayed, "replayed-as-installation")
        assert response.status == 202
        await drained(database)
        later = json.loads(PING)
        later["installation"] = {"id": installation_id}
        await server.deliver("ping", json.dumps(later).encode(), "later")
        await drained(database)
    assert status_of(database, installation_id) == "active"
    statuses = {d["delivery_id"]: (d["status"], d["last_error"]) for d in list_deliveries(database)}
    status, reason = statuses["replayed-as-installation"]
    assert status == "rejected"
    assert reason is not None and "installation.account" in reason
    assert statuses["later"] == ("done", None)


async def test_an_installation_payload_sent_as_a_comment_is_rejected(sqlite_url: str) -> None:
    """The reverse replay: an `installation.deleted` body under `issue_comment` is stored rejected."""
    deleted = example("api.github.com", "installation", "01-deleted.json")
    database = Database(sqlite_url)
    async with running_server(process_intake_settings(sqlite_url)) as server:
        assert (await server.deliver("issue_comment", deleted, "deleted-as-comment")).status == 202
        assert (await server.deliver("issue_comment", deleted, "deleted-as-comment")).status == 200
        await drained(database)
        async with _metrics_text(server) as response:
            metrics = await response.text()
    assert (
        'railyard_webhook_deliveries_received_total{event="issue_comment",outcome="mismatched"} 1.0'
        in metrics
    )
    [stored] = list_deliveries(database)
    assert stored["status"] == "rejected"
    assert stored["last_error"] == "issue_comment payload lacks issue"


def _metrics_text(server: Any) -> Any:
    return server.client.get("/metrics")


async def test_unsigned_requests_with_made_up_events_do_not_grow_the_metrics(sqlite_url: str) -> None:
    """Rejections are counted under known event names or `other`, never the header's text."""
    async with running_server(process_intake_settings(sqlite_url)) as server:
        async with _metrics_text(server) as response:
            before = await response.text()
        for n in range(60):
            headers = {"X-GitHub-Event": f"made-up-{n}", "X-GitHub-Delivery": f"noise-{n}"}
            async with server.client.post("/webhooks", data=b"{}", headers=headers) as refused:
                assert refused.status == 401
        async with server.client.post("/webhooks", data=b"{}", headers={"X-GitHub-Event": "ping"}) as r:
            assert r.status == 400
        async with _metrics_text(server) as response:
            after = await response.text()
    assert "made-up" not in after
    assert 'railyard_webhook_deliveries_received_total{event="other",outcome="rejected"} 60.0' in after
    assert 'railyard_webhook_deliveries_received_total{event="ping",outcome="rejected"} 1.0' in after
    assert len(after) - len(before) < 1_000


async def test_a_signed_delivery_of_an_unknown_event_is_counted_as_other(sqlite_url: str) -> None:
    """The event header is not signed: a stored unknown event counts as `other` too."""
    async with running_server(process_intake_settings(sqlite_url)) as server:
        for n in range(5):
            assert (await server.deliver(f"invented-{n}", b'{"action": "x"}', f"i{n}")).status == 202
        assert (await server.deliver("invented-0", b'{"action": "x"}', "i0")).status == 200
        async with _metrics_text(server) as response:
            metrics = await response.text()
    assert "invented" not in metrics
    assert 'railyard_webhook_deliveries_received_total{event="other",outcome="stored"} 5.0' in metrics
    assert 'railyard_webhook_deliveries_received_total{event="other",outcome="duplicate"} 1.0' in metrics


@functools.cache
def _bomb() -> bytes:
    return gzip.compress(b" " * (256 * 1024 * 1024), compresslevel=9)


class _RecordingZlib:
    """A zlib backend for aiohttp that records every decompressor it is asked for."""

    def __init__(self) -> None:
        self.decompressors = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(zlib, name)

    def decompressobj(self, *args: Any, **kwargs: Any) -> Any:
        """A real decompressor, counted."""
        self.decompressors += 1
        return zlib.decompressobj(*args, **kwargs)


@pytest.fixture
def recording_zlib() -> Iterator[_RecordingZlib]:
    """aiohttp's zlib backend, counting decompressors, for the length of one test."""
    recorder = _RecordingZlib()
    compression_utils.set_zlib_backend(recorder)  # type: ignore[arg-type]
    try:
        yield recorder
    finally:
        compression_utils.set_zlib_backend(zlib)


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "GZIP", "gzip, identity"])
async def test_a_compressed_body_is_refused_with_415_and_never_inflated(
    sqlite_url: str, recording_zlib: _RecordingZlib, encoding: str
) -> None:
    """A signed gzip bomb (260 KB that inflates to 256 MB) gets 415, and no decompressor ever runs."""
    bomb = _bomb()
    headers = {**signed_headers(bomb, "ping", "bomb"), "Content-Encoding": encoding}
    async with running_server(process_intake_settings(sqlite_url)) as server:
        async with server.client.post("/webhooks", data=bomb, headers=headers) as response:
            assert response.status == 415
            assert "Content-Encoding" in (await response.json())["message"]
    assert recording_zlib.decompressors == 0
    assert list_deliveries(Database(sqlite_url)) == []


async def test_content_encoding_identity_is_accepted(sqlite_url: str) -> None:
    """`Content-Encoding: identity` is plain JSON and is stored like any other delivery."""
    headers = {**signed_headers(PING, "ping", "plain"), "Content-Encoding": "identity"}
    async with running_server(process_intake_settings(sqlite_url)) as server:
        async with server.client.post("/webhooks", data=PING, headers=headers) as response:
            assert response.status == 202


class _HeldLock:
    """Another process's write lock on the database, held until the test lets go (or 15 s pass)."""

    def __init__(self, take: Any) -> None:
        self._take = take
        self._taken = threading.Event()
        self._release = threading.Event()
        self.held = False
        self._thread = threading.Thread(target=self._hold, daemon=True)

    def _hold(self) -> None:
        release = self._take()
        self.held = True
        self._taken.set()
        self._release.wait(timeout=15)
        release()
        self.held = False

    async def __aenter__(self) -> _HeldLock:
        self._thread.start()
        await asyncio.to_thread(self._taken.wait)
        return self

    async def __aexit__(self, *_: object) -> None:
        self._release.set()
        await asyncio.to_thread(self._thread.join)


def _sqlite_exclusive(path: str) -> Any:
    def take() -> Any:
        connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        connection.execute("BEGIN EXCLUSIVE")

        def release() -> None:
            connection.execute("ROLLBACK")
            connection.close()

        return release

    return take


def _postgres_table_lock(database: Database) -> Any:
    def take() -> Any:
        connection = database.engine.connect()
        transaction = connection.begin()
        connection.execute(text("LOCK TABLE webhook_deliveries IN ACCESS EXCLUSIVE MODE"))

        def release() -> None:
            transaction.rollback()
            connection.close()

        return release

    return take


async def test_a_locked_database_answers_503_while_the_lock_is_held_then_stores_again(
    database: Database,
) -> None:
    """With the database locked by someone else, a webhook gets 503 before the lock goes; then 202 again."""
    if database.is_sqlite:
        take = _sqlite_exclusive(database.url.removeprefix("sqlite:///"))
    else:
        take = _postgres_table_lock(database)
    async with running_server(process_intake_settings(database.url)) as server:
        async with _HeldLock(take) as lock:
            response = await server.deliver("ping", PING, "while-locked")
            answered_while_held = lock.held
        assert response.status == 503
        assert answered_while_held
        assert "redeliver" in json.dumps(await response.json())
        assert (await server.deliver("ping", PING, "after")).status == 202
        again = await server.deliver("ping", PING, "while-locked")
        assert again.status in (200, 202), "a late commit answers 200, a dropped store 202"


async def test_a_wrong_secret_is_logged_once_a_window_not_once_a_request(sqlite_url: str) -> None:
    """Refusals are visible in the log with their reason, and a flood of them is one line."""
    async with running_server(process_intake_settings(sqlite_url)) as server:
        with capture_logs() as logs:
            for n in range(20):
                assert (await server.deliver("ping", PING, f"guess-{n}", secret="guess")).status == 401
    refused = [entry for entry in logs if entry["event"] == "webhook refused"]
    assert [(e["reason"], e["status"], e["github_event"]) for e in refused] == [
        ("missing or wrong X-Hub-Signature-256", 401, "ping")
    ]
    assert "guess" not in repr(refused), "neither the secret nor the signature is logged"


async def test_a_redelivered_unknown_event_is_processed_under_the_label_other(sqlite_url: str) -> None:
    """`railyard redeliver` of a stored unknown event runs it, and the worker's metrics say `other`."""
    database = Database(sqlite_url)
    async with running_server(process_intake_settings(sqlite_url)) as server:
        assert (await server.deliver("invented-event", b'{"action": "x"}', "odd")).status == 202
        assert requeue(database, ["odd"], time.time()) == ["odd"]
        server.app[WORKER].notify()
        await drained(database)
        async with _metrics_text(server) as response:
            metrics = await response.text()
    assert "invented" not in metrics
    assert 'railyard_webhook_deliveries_processed_total{event="other",status="ignored"} 1.0' in metrics


@pytest.mark.parametrize("delivery_id", ["délivery-1", "tab\there", "ünïcode"])
async def test_a_delivery_id_that_is_not_printable_ascii_is_refused_with_400(
    sqlite_url: str, delivery_id: str
) -> None:
    """GitHub's delivery ids are UUIDs: anything else in that header is refused before it could
    reach the database or a log, and nothing is stored."""
    async with running_server(process_intake_settings(sqlite_url)) as server:
        headers = signed_headers(PING, "ping", delivery_id)
        async with server.client.post("/webhooks", data=PING, headers=headers) as response:
            assert response.status == 400
        assert (await server.deliver("ping", PING, "plain-id")).status == 202
    assert [d["delivery_id"] for d in list_deliveries(Database(sqlite_url))] == ["plain-id"]
