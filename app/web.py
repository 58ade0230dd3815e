"""The web server: `POST /webhooks`, `GET /healthz`, `GET /metrics`, and the worker beside them.

Only `create_app(settings)` builds anything. Webhook answers follow SPEC: 202 once stored,
200 for a delivery id already stored, 401 for a missing or wrong signature, 400 for
missing GitHub headers or a body that is not a JSON object, 413 past 25 MB, 503 in setup
mode. Bad input never gets a 5xx.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text

from app.answers import answer, guarded
from app.database import Database
from app.github import GitHubClient
from app.intake import MAX_BODY_BYTES, DeliveryWriter, IncomingDelivery, verify_signature
from app.maintenance import Maintenance, Retention
from app.metrics import Metrics
from app.outbox import Outbox, effect_counts, release_all_effect_leases
from app.payloads import describe
from app.queue import IGNORED, PENDING, release_all_leases
from app.services import Services, create_services
from app.settings import Settings
from app.setup import SetupFlow, add_setup_routes, start_setup
from app.surfaces import Surfaces
from app.watchdog import Watchdog
from app.worker import Worker
from handlers import ROUTER
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
    ) -> None:
        self._configured = settings.configured
        self._secrets = [secret.get_secret_value().encode() for secret in settings.webhook_secrets]
        self._writer = writer
        self._metrics = metrics
        self._routed = routed
        self._clock = clock
        self._worker = worker

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
        if (request.content_length or 0) > MAX_BODY_BYTES:
            return self._reject(event, 413, "payload larger than 25 MB")
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return self._reject(event, 413, "payload larger than 25 MB")
        if not verify_signature(body, headers.get("X-Hub-Signature-256"), self._secrets):
            return self._reject(event, 401, "missing or wrong X-Hub-Signature-256")
        try:
            payload = orjson.loads(body)
        except orjson.JSONDecodeError:
            return self._reject(event, 400, "body is not JSON")
        if not isinstance(payload, dict):
            return self._reject(event, 400, "body is not a JSON object")
        facts = describe(event, payload)
        now = self._clock()
        routed = event in self._routed
        delivery = IncomingDelivery(
            delivery_id=delivery_id,
            event=event,
            action=facts.action,
            installation_id=facts.installation_id,
            repository=facts.repository,
            ordering_key=facts.ordering_key,
            status=PENDING if routed else IGNORED,
            payload=body.decode(),
            payload_bytes=len(body),
            received_at=now,
            next_attempt_at=now,
        )
        try:
            stored = await self._writer.store(delivery)
        except Exception:
            log.exception("could not store a delivery", delivery_id=delivery_id, github_event=event)
            return answer(503, "could not store the delivery; GitHub can redeliver it", delivery=delivery_id)
        self._metrics.count_received(event, "stored" if stored else "duplicate")
        self._metrics.ack_seconds.observe(time.perf_counter() - started)
        if not stored:
            return web.Response(status=200, body=_ALREADY_STORED, content_type="application/json")
        if routed and self._worker is not None:
            self._worker.notify()
        return web.Response(status=202, body=_STORED, content_type="application/json")

    def _reject(self, event: str, status: int, message: str) -> web.Response:
        self._metrics.count_received(event or "unknown", "rejected")
        return answer(status, message)


_STORED = orjson.dumps({"message": "stored"})
_ALREADY_STORED = orjson.dumps({"message": "already stored"})


async def health(request: web.Request) -> web.Response:
    """Database reachability, worker liveness and queue lag; 503 when something is wrong."""
    app = request.app
    report: dict[str, Any] = {"mode": "running" if app[SETTINGS].configured else "setup"}
    try:
        await asyncio.to_thread(_ping, app[DATABASE])
        report["database"] = "ok"
    except Exception as error:
        report["database"] = f"unreachable: {type(error).__name__}"
    healthy = report["database"] == "ok"
    if WORKER in app and healthy:
        worker = app[WORKER]
        depth, lag = await worker.refresh_gauges()
        age = time.time() - worker.heartbeat
        report["worker"] = {"alive": age < 30, "last_heartbeat_seconds": round(age, 3)}
        report["queue"] = {"pending": depth, "lag_seconds": round(lag, 3)}
        healthy = report["worker"]["alive"]
    report["status"] = "ok" if healthy else "degraded"
    return web.json_response(report, status=200 if healthy else 503, dumps=lambda o: orjson.dumps(o).decode())


def _ping(database: Database) -> None:
    with database.read() as connection:
        connection.execute(text("SELECT 1"))


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


async def index(request: web.Request) -> web.Response:
    """A one-line description of what is running (in setup mode `/` is the setup page instead)."""
    return web.Response(text="railyard is running. Webhooks go to POST /webhooks.\n")


async def _lifecycle(app: web.Application) -> AsyncIterator[None]:
    """Migrate, start the intake writer and the worker; stop them in reverse on shutdown."""
    database = app[DATABASE]
    await asyncio.to_thread(database.migrate)
    if database.is_sqlite:
        # One server process owns a SQLite file: leases still held are a dead process's.
        released = await asyncio.to_thread(release_all_leases, database)
        if released:
            log.warning("took over deliveries leased before a restart", count=released)
        released = await asyncio.to_thread(release_all_effect_leases, database)
        if released:
            log.warning("took over GitHub writes leased before a restart", count=released)
    writer = app[WRITER]
    await writer.start()
    stop = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []
    github = app.get(GITHUB)
    if github is not None:
        await github.start()
    for key, name in (
        (WORKER, "railyard-worker"),
        (OUTBOX, "railyard-outbox"),
        (MAINTENANCE, "railyard-maintenance"),
        (WATCHDOG, "railyard-watchdog"),
    ):
        if key in app:
            tasks.append(asyncio.create_task(app[key].run(stop), name=name))
    log.info("railyard started", mode="running" if app[SETTINGS].configured else "setup")
    try:
        yield
    finally:
        stop.set()
        await asyncio.gather(*tasks)  # every background task is awaited, none left behind
        await writer.close()
        if github is not None:
            await github.close()
        database.close()


def create_app(
    settings: Settings,
    *,
    services: Services | None = None,
    router: Router = ROUTER,
    clock: Callable[[], float] = time.time,
    run_worker: bool = True,
    outbox_spacing: float = 1.0,
    setup: SetupFlow | None = None,
) -> web.Application:
    """Build the server and everything it runs; nothing connects until it starts.

    Without credentials `/` is the setup page (`setup`, or a new flow with its own token).
    """
    app = web.Application(client_max_size=MAX_BODY_BYTES)
    database = services.database if services else Database(settings.database_url)
    metrics = Metrics()
    if services is None:
        github = GitHubClient(settings, metrics, clock=clock) if settings.configured else None
        services = create_services(database, clock, github, settings.app_id)
    app[SETTINGS] = settings
    app[DATABASE] = database
    app[METRICS] = metrics
    app[WRITER] = DeliveryWriter(database)
    if run_worker and settings.configured:
        app[WORKER] = Worker(services, router, app[METRICS], intake_busy=app[WRITER].saturated)
        if services.github is not None:
            app[GITHUB] = services.github
            assert settings.app_id is not None
            app[OUTBOX] = Outbox(
                database,
                services.github,
                app[METRICS],
                app_id=settings.app_id,
                clock=clock,
                spacing=outbox_spacing,
                renderers=Surfaces(services).renderers(),
            )
        retention = Retention(settings.payload_retention_days, settings.delivery_retention_days)
        app[MAINTENANCE] = Maintenance(
            database,
            services.github,
            clock=clock,
            retention=retention,
            recovery_every=settings.recovery_interval_seconds,
        )
        app[WATCHDOG] = Watchdog(
            database, services.tickets, clock=clock, every=settings.watchdog_interval_seconds
        )
    app.cleanup_ctx.append(_lifecycle)
    receiver = WebhookReceiver(settings, app[WRITER], metrics, router.events, clock, app.get(WORKER))
    app.router.add_post("/webhooks", guarded(receiver.receive))
    app.router.add_get("/healthz", guarded(health))
    app.router.add_get("/metrics", guarded(serve_metrics))
    if settings.configured:
        app.router.add_get("/", guarded(index))
    else:
        add_setup_routes(app, setup or start_setup(settings))
    return app
