"""The web server: `POST /webhooks`, `GET /healthz`, `GET /metrics`, and the worker beside them.

`app.bootstrap.server` builds what it serves; `create_app` only adds the routes and the
lifecycle. Webhook answers follow SPEC: 202 once stored, 200 for a delivery id already
stored, 401 for a missing or wrong signature, 400 for missing GitHub headers or a body that
is not a JSON object, 413 past 25 MB, 415 for a `Content-Encoding` other than identity (no
request body is ever inflated), 503 in setup mode and when the delivery cannot be stored
within `STORE_TIMEOUT` (4 s, inside GitHub's 10 s; GitHub records the failure and recovery
redelivers it). Bad input never gets a 5xx.

GitHub signs the body, not `X-GitHub-Event`: a signed payload without the shape of its
event (`app.payloads.SHAPES`) is stored as `rejected`, answered 202 and never processed,
so a body replayed under another event's name changes nothing. Nothing an unsigned request
sends becomes state or a metric label (events are counted under known names or `other`);
refusals are logged at most once a minute per reason, with the count of those left out.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import orjson
import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app.github.client import GitHubClient
from app.github.users import UserReads
from app.runtime.adapters import Adapters
from app.runtime.maintenance import Maintenance
from app.runtime.metrics import Metrics, event_label
from app.runtime.outbox import Outbox
from app.runtime.supervisor import Supervisor, close_all
from app.runtime.watchdog import Watchdog
from app.runtime.worker import Worker
from app.settings import Settings, railyard_version
from app.store.database import Database
from app.store.effects import effect_counts, release_effect_leases
from app.store.intake import (
    MAX_BODY_BYTES,
    DeliveryWriter,
    IncomingDelivery,
    RejectionLog,
    StoreTimeoutError,
    verify_signature,
)
from app.store.queue import IGNORED, PENDING, REJECTED, release_all_leases
from app.web.api_routes import AgentApi
from app.web.bodies import BODIES, BodyBudget, BodyRefused
from app.web.page_views import install as install_pages
from app.web.payloads import describe, mismatch
from app.web.responses import answer, guarded
from app.web.setup import SetupFlow, add_setup_routes
from handlers.routing import Router

log = structlog.get_logger(__name__)

SETTINGS: web.AppKey[Settings] = web.AppKey("settings", Settings)
DATABASE: web.AppKey[Database] = web.AppKey("database", Database)
WRITER: web.AppKey[DeliveryWriter] = web.AppKey("writer", DeliveryWriter)
METRICS: web.AppKey[Metrics] = web.AppKey("metrics", Metrics)
WORKER: web.AppKey[Worker] = web.AppKey("worker", Worker)
GITHUB: web.AppKey[GitHubClient] = web.AppKey("github", GitHubClient)
OUTBOX: web.AppKey[Outbox] = web.AppKey("outbox", Outbox)
MAINTENANCE: web.AppKey[Maintenance] = web.AppKey("maintenance", Maintenance)
WATCHDOG: web.AppKey[Watchdog] = web.AppKey("watchdog", Watchdog)
SUPERVISOR: web.AppKey[Supervisor] = web.AppKey("supervisor", Supervisor)
SHELL: web.AppKey[Adapters] = web.AppKey("shell", Adapters)
SETUP: web.AppKey[SetupFlow] = web.AppKey("setup", SetupFlow)


SETUP_MODE_MESSAGE = "railyard is in setup mode: set APP_ID, PRIVATE_KEY and WEBHOOK_SECRET, then restart it"


class WebhookReceiver:
    """`POST /webhooks`: verify, store durably, acknowledge.

    Everything a delivery needs is looked up once, when the server is built: this runs for
    every webhook, thousands of times a second under load.
    """

    def __init__(
        self,
        settings: Settings,
        writer: DeliveryWriter,
        metrics: Metrics,
        routed: frozenset[str],
        clock: Callable[[], float],
        worker: Worker | None,
        bodies: BodyBudget,
    ) -> None:
        self._configured = settings.configured
        self._secrets = [secret.get_secret_value().encode() for secret in settings.webhook_secrets]
        self._writer = writer
        self._metrics = metrics
        self._routed = routed
        self._clock = clock
        self._worker = worker
        self._refusals = RejectionLog()
        self._bodies = bodies

    async def receive(self, request: web.Request) -> web.Response:
        """Answer one delivery (see the module docstring for the statuses)."""
        started = time.perf_counter()
        if not self._configured:
            return answer(503, SETUP_MODE_MESSAGE)
        headers = request.headers
        event = headers.get("X-GitHub-Event", "").strip()
        delivery_id = headers.get("X-GitHub-Delivery", "").strip()
        if not event or not delivery_id or len(delivery_id) > 200 or len(event) > 100:
            return self._reject(event, 400, "missing or malformed X-GitHub-Event / X-GitHub-Delivery headers")
        if headers.get("Content-Encoding", "identity").strip().lower() != "identity":
            return self._reject(event, 415, "Content-Encoding must be identity: GitHub sends plain JSON")
        if (request.content_length or 0) > MAX_BODY_BYTES:
            return self._reject(event, 413, "payload larger than 25 MB")
        try:
            async with self._bodies.body(request, MAX_BODY_BYTES) as body:
                return await self._accept(
                    event, delivery_id, body, started, headers.get("X-Hub-Signature-256")
                )
        except BodyRefused as refused:
            response = self._reject(event, refused.status, refused.message)
            if refused.retry_after is not None:
                response.headers["Retry-After"] = str(refused.retry_after)
            return response

    async def _accept(
        self, event: str, delivery_id: str, body: bytes, started: float, signature: str | None
    ) -> web.Response:
        """Verify the body read whole, store it durably and acknowledge it."""
        if not verify_signature(body, signature, self._secrets):
            return self._reject(event, 401, "missing or wrong X-Hub-Signature-256")
        try:
            payload = orjson.loads(body)
        except orjson.JSONDecodeError:
            return self._reject(event, 400, "body is not JSON")
        if not isinstance(payload, dict):
            return self._reject(event, 400, "body is not a JSON object")
        delivery = self._delivery(event, delivery_id, payload, body)
        try:
            stored = await self._writer.store(delivery)
        except Exception as error:
            return self._unavailable(delivery, error)
        self._metrics.ack_seconds.observe(time.perf_counter() - started)
        if not stored:
            self._metrics.count_received(event, "duplicate")
            return web.Response(status=200, body=_ALREADY_STORED, content_type="application/json")
        if delivery.status == REJECTED:
            self._metrics.count_received(event, "mismatched")
            self._refusals.refused(delivery.last_error or "", 202, delivery_id=delivery_id)
            return answer(202, _MISMATCH, reason=delivery.last_error)
        self._metrics.count_received(event, "stored")
        if delivery.status == PENDING and self._worker is not None:
            self._worker.notify()
        return web.Response(status=202, body=_STORED, content_type="application/json")

    def _delivery(
        self, event: str, delivery_id: str, payload: dict[str, Any], body: bytes
    ) -> IncomingDelivery:
        """The row to store: rejected, and never processed, when the payload is not of its event."""
        facts = describe(event, payload)
        wrong = mismatch(event, payload)
        now = self._clock()
        status = REJECTED if wrong else PENDING if event in self._routed else IGNORED
        return IncomingDelivery(
            delivery_id=delivery_id,
            event=event,
            action=facts.action,
            installation_id=facts.installation_id,
            repository=facts.repository,
            ordering_key=facts.ordering_key,
            status=status,
            payload=body.decode(),
            payload_bytes=len(body),
            received_at=now,
            next_attempt_at=now,
            last_error=wrong,
        )

    def _unavailable(self, delivery: IncomingDelivery, error: Exception) -> web.Response:
        """503: not stored (the database is locked or down); GitHub records the failure."""
        reason = f"could not store a delivery: {type(error).__name__}"
        fields: dict[str, Any] = {"delivery_id": delivery.delivery_id, "error": str(error)[:200]}
        if not isinstance(error, StoreTimeoutError):  # a timeout needs no traceback; the rest do
            fields["exc_info"] = error
        self._refusals.refused(reason, 503, **fields)
        return answer(503, _UNAVAILABLE, delivery=delivery.delivery_id)

    def _reject(self, event: str, status: int, message: str) -> web.Response:
        """Refuse a request, counted under a known event name (or `other`) and logged sparingly."""
        self._metrics.count_received(event, "rejected")
        self._refusals.refused(message, status, github_event=event_label(event))
        return answer(status, message)


_MISMATCH = "rejected: the payload does not have the shape of X-GitHub-Event; stored, never processed"
_UNAVAILABLE = "could not store the delivery (the database is locked or unreachable); GitHub can redeliver it"
_STORED = orjson.dumps({"message": "stored"})
_ALREADY_STORED = orjson.dumps({"message": "already stored"})


async def health(request: web.Request) -> web.Response:
    """Database reachability, each background loop's last good iteration, queue lag; 503 when degraded.

    Degraded: the database does not answer, or a loop (worker, outbox, watchdog,
    housekeeping) has ended or not completed an iteration for longer than its limit.
    """
    app = request.app
    report: dict[str, Any] = {
        "mode": "running" if app[SETTINGS].configured else "setup",
        "version": railyard_version(),
    }
    try:
        await asyncio.to_thread(_ping, app[DATABASE])
        report["database"] = "ok"
    except Exception as error:
        report["database"] = f"unreachable: {type(error).__name__}"
    healthy = report["database"] == "ok"
    if SUPERVISOR in app:
        loops_ok, report["loops"] = app[SUPERVISOR].report()
        healthy = healthy and loops_ok
    if WORKER in app and report["database"] == "ok":
        depth, lag = await app[WORKER].refresh_gauges()
        report["queue"] = {"pending": depth, "lag_seconds": round(lag, 3)}
    report["status"] = "ok" if healthy else "degraded"
    return web.json_response(report, status=200 if healthy else 503, dumps=lambda o: orjson.dumps(o).decode())


def _ping(database: Database) -> None:
    database.ping()


async def serve_metrics(request: web.Request) -> web.Response:
    """Prometheus text format, behind `METRICS_TOKEN` when one is set."""
    token = request.app[SETTINGS].metrics_token
    if token is not None:
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip().encode()
        if not hmac.compare_digest(given, token.get_secret_value().encode()):
            return answer(401, "metrics need Authorization: Bearer METRICS_TOKEN")
    if WORKER in request.app:
        await request.app[WORKER].refresh_gauges()
    counts = await asyncio.to_thread(effect_counts, request.app[DATABASE])
    request.app[METRICS].outbox_pending.set(counts.get("pending", 0))
    request.app[METRICS].outbox_failed_total.set(counts.get("failed", 0))
    body = generate_latest(request.app[METRICS].registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


async def _api_in_setup(request: web.Request) -> web.Response:
    """The API in setup mode: nothing to serve until the app is registered."""
    return answer(503, SETUP_MODE_MESSAGE)


async def index(request: web.Request) -> web.Response:
    """A one-line description of what is running (in setup mode `/` is the setup page instead)."""
    return web.Response(text="railyard is running. Webhooks go to POST /webhooks.\n")


async def _lifecycle(app: web.Application) -> AsyncIterator[None]:
    """Migrate, start the intake writer and the supervised loops; stop them in reverse on shutdown.

    Shutdown closes everything whatever a loop did: each step runs even if one before failed.
    """
    database = app[DATABASE]
    await asyncio.to_thread(database.migrate)
    if database.is_sqlite:
        # One server process owns a SQLite file: leases still held are a dead process's.
        released = await asyncio.to_thread(release_all_leases, database)
        if released:
            log.warning("took over deliveries leased before a restart", count=released)
        effects = await asyncio.to_thread(release_effect_leases, database)
        if effects:
            log.warning("took over GitHub writes leased before a restart", count=effects)
    writer = app[WRITER]
    await writer.start()
    github = app.get(GITHUB)
    if github is not None:
        await github.start()
    supervisor = app[SUPERVISOR]
    supervisor.start()
    log.info("railyard started", mode="running" if app[SETTINGS].configured else "setup")
    try:
        yield
    finally:
        await close_all(
            supervisor.close,  # every loop is stopped and awaited, none left behind
            writer.close,
            github.close if github is not None else None,
            lambda: asyncio.to_thread(app[SHELL].store.close),
            lambda: asyncio.to_thread(database.close),
        )


@dataclass
class Served:
    """What one server process serves, built by `app.bootstrap.server`: the adapters, the intake
    writer, the loops (with credentials and a worker) and their supervisor, the setup flow (setup
    mode) and the user-token reads (the API's)."""

    settings: Settings
    shell: Adapters
    metrics: Metrics
    writer: DeliveryWriter
    router: Router
    clock: Callable[[], float]
    supervisor: Supervisor | None = None
    worker: Worker | None = None
    outbox: Outbox | None = None
    maintenance: Maintenance | None = None
    watchdog: Watchdog | None = None
    setup: SetupFlow | None = None
    users: UserReads | None = None


def create_app(served: Served) -> web.Application:
    """The server over what `served` holds: the routes, and the loops started and stopped with it."""
    settings, shell, metrics, clock = served.settings, served.shell, served.metrics, served.clock
    # No request body is inflated: aiohttp would decompress a gzip body as it arrives, before
    # the webhook route can refuse it (a 260 KB bomb is 256 MB inflated).
    app = web.Application(client_max_size=MAX_BODY_BYTES, handler_args={"auto_decompress": False})
    app[SETTINGS] = settings
    app[SHELL] = shell
    app[DATABASE] = shell.database
    app[METRICS] = metrics
    app[WRITER] = served.writer
    if served.worker is not None:
        app[WORKER] = served.worker
    if served.maintenance is not None:
        app[MAINTENANCE] = served.maintenance
    if served.watchdog is not None:
        app[WATCHDOG] = served.watchdog
    if shell.github is not None and served.outbox is not None:
        app[GITHUB] = shell.github
        app[OUTBOX] = served.outbox
    assert served.supervisor is not None, "app.bootstrap.server supervises the loops"
    app[SUPERVISOR] = served.supervisor
    app.cleanup_ctx.append(_lifecycle)
    bodies = app[BODIES] = BodyBudget()  # every body this process reads: the webhooks' and the API's
    routed = served.router.events
    receiver = WebhookReceiver(settings, served.writer, metrics, routed, clock, served.worker, bodies)
    app.router.add_post("/webhooks", guarded(receiver.receive))
    app.router.add_get("/healthz", guarded(health))
    app.router.add_get("/metrics", guarded(serve_metrics))
    if served.users is not None:
        reads = settings.api_reads_per_minute
        AgentApi(shell, served.users, clock=clock, reads_per_minute=reads, bodies=bodies).add_routes(app)
    else:
        app.router.add_route("*", "/api/v1/{tail:.*}", guarded(_api_in_setup))
    if settings.configured:
        app.router.add_get("/", guarded(index))
        install_pages(
            app, settings, shell.database, shell.tickets
        )  # sign-in with GitHub and the ticket pages
    else:
        assert served.setup is not None, "app.bootstrap.server starts the setup flow in setup mode"
        app[SETUP] = served.setup
        add_setup_routes(app, served.setup)
    return app
