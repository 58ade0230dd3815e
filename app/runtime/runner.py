"""Running the long-lived processes: `railyard serve` and `railyard worker`."""

from __future__ import annotations

import asyncio
import signal
import sys

import structlog
from aiohttp import web

from app.bootstrap import wire
from app.github.client import ConfigurationError, GitHubClient
from app.runtime.metrics import Metrics
from app.runtime.supervisor import close_all, supervise
from app.settings import Settings
from app.store.database import Database
from app.store.limits import SharedLimits
from app.web.manifest import ManifestError
from app.web.server import create_app
from app.web.setup import SetupFlow, setup_url, start_setup
from handlers import ROUTER

log = structlog.get_logger(__name__)


def _event_loop_policy() -> None:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux and macOS
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def run_server(settings: Settings) -> int:
    """Serve until SIGINT or SIGTERM."""
    _event_loop_policy()
    if not settings.configured:
        print(
            "railyard: no app credentials (APP_ID, PRIVATE_KEY or PRIVATE_KEY_PATH, WEBHOOK_SECRET): "
            "starting in setup mode; POST /webhooks answers 503.",
            file=sys.stderr,
        )
    url = f"http://{settings.host}:{settings.port}"
    try:
        setup = None if settings.configured else start_setup(settings)
        app = create_app(settings, setup=setup)
    except (ConfigurationError, ManifestError) as error:
        print(f"railyard: {error}", file=sys.stderr)
        return 2
    web.run_app(
        app,
        host=settings.host,
        port=settings.port,
        print=lambda _: _announce(url, settings, setup),
        access_log=None,
        shutdown_timeout=10,
    )
    return 0


def _announce(url: str, settings: Settings, setup: SetupFlow | None) -> None:
    """Say where the server listens and, in setup mode, print the one-time setup link."""
    print(f"railyard: listening on {url}", file=sys.stderr, flush=True)
    if setup is not None:
        print(
            f"railyard: to register the GitHub App, open {setup_url(settings, setup)} "
            "(this link works until the app's credentials are saved)",
            file=sys.stderr,
            flush=True,
        )


def run_worker(settings: Settings, concurrency: int) -> int:
    """Process the shared queues until SIGINT or SIGTERM (any number may run against PostgreSQL).

    Each worker process also performs outbox effects when the app has credentials.
    """
    _event_loop_policy()
    database = Database(settings.database_url)
    if database.is_sqlite:
        print("railyard: extra workers are meant for PostgreSQL; `serve` already runs one.", file=sys.stderr)
    try:
        # Rate-limit pauses and write slots are shared with every other process on the database.
        limits = SharedLimits(database)
        github = GitHubClient(settings, Metrics(), limits=limits) if settings.configured else None
    except ConfigurationError as error:
        print(f"railyard: {error}", file=sys.stderr)
        return 2
    return asyncio.run(_work(settings, database, concurrency, github))


async def _work(settings: Settings, database: Database, concurrency: int, github: GitHubClient | None) -> int:
    await asyncio.to_thread(database.migrate)
    metrics = Metrics()
    shell = wire(database, github=github, app_id=settings.app_id)
    worker = shell.worker(ROUTER, metrics, concurrency=concurrency)
    outbox = shell.outbox(metrics)
    if github is not None:
        await github.start()
    # The same supervised loops as `railyard serve` (app.web.server), built the same way; the
    # watchdog and housekeeping run in the server only.
    supervisor = supervise(worker, outbox)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, supervisor.stop.set)
    supervisor.start()
    log.info("worker started", worker=worker.name)
    try:
        await supervisor.stop.wait()
    finally:
        await close_all(
            supervisor.close,
            github.close if github is not None else None,
            lambda: asyncio.to_thread(shell.store.close),
            lambda: asyncio.to_thread(database.close),
        )
    return 0
