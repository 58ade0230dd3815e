"""The one place that builds: the adapters behind the handlers' ports, the GitHub client with
the shared limits and HTTP cache, the loops, and the web server, for `railyard serve`,
`railyard worker` and every CLI command alike. No other module constructs a client, a limit,
a cache, a store or a loop (`tests/unit/test_layers.py` holds the client's part of that).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from aiohttp import web
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

from app.contracts.effect_types import Effect, EffectKind, surfaces_for
from app.contracts.traces import TRACING
from app.github.aiohttp_transport import AiohttpTransport
from app.github.ancestry import Ancestry
from app.github.client import GitHubClient
from app.github.conditional_get import MemoryHttpCache, TieredHttpCache
from app.github.config_loader import ConfigLoader
from app.github.projects import ProjectsAdapter
from app.github.reads import ConfigsAdapter, GitHubReadsAdapter, RolesAdapter, config_fetcher
from app.github.users import UserReads
from app.runtime.adapters import Adapters
from app.runtime.maintenance import Maintenance
from app.runtime.metrics import Metrics
from app.runtime.outbox import Outbox, Writer
from app.runtime.project_sync import ProjectSync, status_comment_again
from app.runtime.rechecks import AcceptanceRechecks
from app.runtime.supervisor import Supervisor, supervise
from app.runtime.surface_renderers import Surfaces
from app.runtime.watchdog import Watchdog
from app.runtime.worker import Worker
from app.settings import Settings
from app.store.budgets import SqlBudgets
from app.store.database import Database
from app.store.effects import MIN_SURFACE_INTERVAL
from app.store.http_cache import http_cache_bounds, shared_http_cache
from app.store.intake import DeliveryWriter, IntakeWriter
from app.store.intake_process import ProcessDeliveryWriter
from app.store.limits import SharedLimits
from app.store.retention import Retention
from app.store.tickets import SurfacesFor, TicketService
from app.store.token_cache import SharedTokens, SharedTokenStrategy, sealing_key
from app.store.unit import SqlStore
from app.views.replies_text import render
from app.web.server import Served, create_app
from app.web.setup import SetupFlow, start_setup
from handlers import ROUTER
from handlers.ports import Clock, Services
from handlers.routing import Router
from policies.model import Ticket

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider


class _Unwired:
    """Stands for GitHub in a process without app credentials: any use fails the delivery, loudly."""

    def __init__(self, what: str) -> None:
        self._what = what

    def __getattr__(self, name: str) -> Any:
        return self._fail

    def _fail(self, *args: object, **kwargs: object) -> NoReturn:
        raise RuntimeError(f"{self._what} is not available: set APP_ID, PRIVATE_KEY and WEBHOOK_SECRET")


class Shell(Adapters):
    """One process's adapters, and the loops built over them."""

    def worker(self, router: Router, metrics: Metrics, **options: Any) -> Worker:
        """The worker that runs stored deliveries through `router`'s handlers."""
        return Worker(self.database, self.ports, router, metrics, clock=self.clock, **options)

    def outbox(self, metrics: Metrics, **options: Any) -> Outbox | None:
        """The outbox that performs GitHub writes (None without app credentials)."""
        if self.github is None or self.app_id is None:
            return None
        renderers = self.surfaces().renderers()
        projects = ProjectSync(ProjectsAdapter(self.github), status_comment_again(self.database, self.clock))
        writers: dict[str, Writer] = {EffectKind.PROJECT_FIELDS: projects.write}
        return Outbox(
            self.database,
            self.github,
            metrics,
            app_id=self.app_id,
            renderers=renderers,
            writers=writers,
            **options,
        )

    def surfaces(self) -> Surfaces:
        """The renderers of the status comment and the check-run."""
        return Surfaces(self.database, self.tickets, self.loader, self.github, self.ports)


def surfaces_under(loader: ConfigLoader | None) -> SurfacesFor:
    """The writes that show a changed ticket; its project items' only when this process does not
    know the repository's file to name no project (the handler that made the change has just
    read it), so a repository without `projects:` costs the outbox nothing more."""

    def surfaces(installation_id: int, ticket: Ticket) -> list[Effect]:
        known = loader.known(ticket.key.repository) if loader is not None else None
        projects = known is None or bool(known.config.projects)
        return surfaces_for(installation_id, ticket, projects=projects)

    return surfaces


def wire(
    database: Database,
    clock: Clock = time.time,
    github: GitHubClient | None = None,
    app_id: int | None = None,
    metrics: Metrics | None = None,
) -> Shell:
    """Wire the adapters for one process (GitHub's only when a client is given; commands are counted
    in `metrics`, the one `/metrics` serves)."""
    loader = ConfigLoader(config_fetcher(github)) if github is not None else None
    surfaces = surfaces_under(loader)
    tickets = TicketService(database, surfaces=surfaces)
    store = SqlStore(database, render=render, surfaces=surfaces, clock=clock)
    unwired: Any = _Unwired("GitHub")
    ports = Services(
        store=store,
        github=GitHubReadsAdapter(github) if github is not None else unwired,
        configs=ConfigsAdapter(loader) if loader is not None else unwired,
        roles=RolesAdapter(github) if github is not None else unwired,
        ancestry=Ancestry(github) if github is not None else unwired,
        app_id=app_id if app_id is not None else 0,
        clock=clock,
        budgets=SqlBudgets(database, clock),
        counts=metrics if metrics is not None else Metrics(),  # a CLI's counts are its own, unread
    )
    return Shell(database, clock, github, app_id, tickets, loader, store, ports)


TRACES_ON = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SERVICE_NAME")
"""Any of these set turns traces on (so does OTEL_TRACES_EXPORTER, unless `none`); docs/traces.md."""
TRACE_EXPORTERS = ("otlp", "console", "none")


def tracing_wanted(environ: Mapping[str, str]) -> bool:
    """Whether the standard OTEL_* variables ask for traces: off when none is set, and when
    OTEL_SDK_DISABLED is true or OTEL_TRACES_EXPORTER is `none`."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter and exporter not in TRACE_EXPORTERS:
        raise ValueError(
            f"OTEL_TRACES_EXPORTER={exporter!r}: railyard knows only {', '.join(TRACE_EXPORTERS)}"
        )
    if exporter == "none":
        return False
    return bool(exporter) or any(environ.get(name, "").strip() for name in TRACES_ON)


def start_tracing(environ: Mapping[str, str] | None = None) -> Callable[[], Awaitable[None]] | None:
    """Install the process's tracer when the OTEL_* variables ask for one; the step that
    flushes and stops it at shutdown (None: tracing stays off, and nothing of the SDK is loaded).

    The SDK reads the rest of its own variables: the endpoint, headers and timeout
    (OTEL_EXPORTER_OTLP_*), the batch's schedule (OTEL_BSP_*), the sampler (OTEL_TRACES_SAMPLER)
    and the resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES)."""
    environ = os.environ if environ is None else environ
    if not tracing_wanted(environ):
        return None
    provider = _tracer_provider(environ)
    TRACING.use(provider.get_tracer("railyard"))

    async def stop() -> None:
        TRACING.use(None)
        await asyncio.to_thread(provider.shutdown)

    return stop


def _tracer_provider(environ: Mapping[str, str]) -> TracerProvider:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

    named = {} if environ.get("OTEL_SERVICE_NAME", "").strip() else {"service.name": "railyard"}
    provider = TracerProvider(resource=Resource.create(named))
    console = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "console"
    exporter: SpanExporter = ConsoleSpanExporter() if console else OTLPSpanExporter()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def open_database(settings: Settings) -> Database:
    """The process's one database (nothing connects until it is used)."""
    return Database(settings.database_url)


def github_client(
    settings: Settings, database: Database, metrics: Metrics, clock: Clock = time.time
) -> GitHubClient:
    """The process's one GitHub client. Its rate-limit pauses, write slots and kept GET answers
    live in `database`, shared with every `serve`, `worker` and CLI process on it: a pause one
    of them stored is honoured by all."""
    limits = SharedLimits(database)
    shared = shared_http_cache(settings, database)
    cache = TieredHttpCache(MemoryHttpCache(), shared) if shared is not None else None
    transport = AiohttpTransport()  # httpx's API, aiohttp's exchange: a third of the CPU per call

    def tokens(key: PrivateKeyTypes) -> SharedTokenStrategy:
        return SharedTokenStrategy(SharedTokens(database, sealing_key(key)))

    return GitHubClient(
        settings,
        metrics,
        clock=clock,
        limits=limits,
        http_cache=cache,
        transport=transport,
        token_cache=tokens,
    )


@contextlib.asynccontextmanager
async def command_shell(settings: Settings, database: Database) -> AsyncIterator[Shell]:
    """The shell one CLI command works through, its GitHub client started. On the way out its
    store closes first (a read's end runs on its thread before the database closes: no
    connection goes back to a disposed pool), then the client."""
    github = github_client(settings, database, Metrics())
    await github.start()
    try:
        shell = wire(database, github=github, app_id=settings.app_id)
        try:
            yield shell
        finally:
            await asyncio.to_thread(shell.store.close)
    finally:
        await github.close()


def intake_writer(settings: Settings, database: Database) -> IntakeWriter:
    """The intake's writer: on SQLite a process of its own unless INTAKE_WRITER=thread
    (`app.store.intake_process`); on PostgreSQL, whose commits wait on the network, a thread;
    in setup mode, which stores nothing, a thread that never writes."""
    if database.is_sqlite and settings.intake_writer == "process" and settings.configured:
        return ProcessDeliveryWriter(database)
    return DeliveryWriter(database)


def server(
    settings: Settings,
    *,
    router: Router = ROUTER,
    clock: Clock = time.time,
    run_worker: bool = True,
    outbox_spacing: float = 1.0,
    surface_interval: float = MIN_SURFACE_INTERVAL,
    setup: SetupFlow | None = None,
) -> web.Application:
    """`railyard serve`'s application: everything it runs, built here; nothing connects until it
    starts. Without credentials `/` is the setup page (`setup`, or a new flow with its own token)."""
    database = open_database(settings)
    metrics = Metrics()
    github = github_client(settings, database, metrics, clock) if settings.configured else None
    shell = wire(database, clock, github, settings.app_id, metrics)
    writer = intake_writer(settings, database)
    served = Served(settings, shell, metrics, writer, router, clock)
    if not settings.configured:
        served.setup = setup or start_setup(settings)
    if run_worker and settings.configured:
        served.worker = shell.worker(router, metrics, intake_busy=writer.saturated)
        served.outbox = shell.outbox(
            metrics, clock=clock, spacing=outbox_spacing, surface_interval=surface_interval
        )
        if served.outbox is not None:
            served.worker.processed = served.outbox.notify
        served.maintenance = _maintenance(settings, database, github, clock)
        served.watchdog = Watchdog(
            database, shell.tickets, clock=clock, every=settings.watchdog_interval_seconds
        )
    # The same supervised loops as `railyard worker` (`worker_loops`), built the same way.
    rechecks = None
    if run_worker and settings.configured:
        rechecks = AcceptanceRechecks(database, shell.ports, every=settings.acceptance_recheck_seconds)
    loops = (served.worker, served.outbox, served.maintenance, served.watchdog, rechecks)
    served.supervisor = supervise(*loops)
    if github is not None:
        served.users = UserReads(github, clock=clock)
    application = create_app(served)
    stop_tracing = start_tracing()
    if stop_tracing is not None:
        application.on_cleanup.append(lambda _: stop_tracing())
    return application


def _maintenance(
    settings: Settings, database: Database, github: GitHubClient | None, clock: Clock
) -> Maintenance:
    retention = Retention(
        settings.payload_retention_days, settings.delivery_retention_days, settings.held_retention_days
    )
    return Maintenance(
        database,
        github,
        clock=clock,
        retention=retention,
        recovery_every=settings.recovery_interval_seconds,
        http_cache=http_cache_bounds(settings),
    )


@dataclass
class WorkerLoops:
    """`railyard worker`'s process: its shell (GitHub's client in it), the worker, their supervisor."""

    shell: Shell
    worker: Worker
    supervisor: Supervisor
    stop_tracing: Callable[[], Awaitable[None]] | None = None


def worker_loops(settings: Settings, database: Database, concurrency: int) -> WorkerLoops:
    """An extra worker process's loops: the worker and, with credentials, the outbox, counted in
    one `Metrics`; the watchdog and housekeeping run in the server only."""
    metrics = Metrics()
    github = github_client(settings, database, metrics) if settings.configured else None
    shell = wire(database, github=github, app_id=settings.app_id, metrics=metrics)
    worker = shell.worker(ROUTER, metrics, concurrency=concurrency)
    outbox = shell.outbox(metrics)
    if outbox is not None:
        worker.processed = outbox.notify  # a processed delivery's effects are due now
    return WorkerLoops(shell, worker, supervise(worker, outbox), start_tracing())
