"""The entry points of the long-lived processes, `railyard serve` and `railyard worker`: each asks
`app.bootstrap` for what it runs, then runs it until a signal."""

from __future__ import annotations

import asyncio
import errno
import logging
import signal
import socket

import structlog
from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

from app.bootstrap import open_database, server, worker_loops
from app.cli.errors import USAGE, Stop
from app.logs import ACCESS_LOGGER
from app.runtime.heap import settle_heap
from app.runtime.supervisor import close_all
from app.settings import Settings
from app.store.database import Database
from app.store.lease_holders import LeaseHolders
from app.version import railyard_version
from app.web.server import SETUP
from app.web.setup import SetupFlow, setup_url

log = structlog.get_logger(__name__)


def _event_loop_policy() -> None:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux and macOS
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def run_server(settings: Settings) -> int:
    """Serve until SIGINT or SIGTERM; a bad setting or a taken port stops it before anything starts.

    The socket is bound first, so a port in use is said before the database is touched or
    "railyard started" is logged.
    """
    _event_loop_policy()
    if not settings.configured:
        log.warning(
            "no app credentials (APP_ID, PRIVATE_KEY or PRIVATE_KEY_PATH, WEBHOOK_SECRET): "
            "starting in setup mode; POST /webhooks answers 503"
        )
    app = server(settings)
    app.on_startup.append(_settled)  # after the lifecycle's start: the loops are built
    setup = app.get(SETUP)
    listening = listen(settings.host, settings.port)
    url = f"http://{settings.host}:{listening.getsockname()[1]}"
    web.run_app(
        app,
        sock=listening,
        print=lambda _: _announce(url, settings, setup),
        access_log=logging.getLogger(ACCESS_LOGGER) if settings.access_log else None,
        access_log_class=AccessLog,
        shutdown_timeout=10,
    )
    return 0


async def _settled(_: web.Application) -> None:
    settle_heap()


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on HOST:PORT, or a `Stop` that says what is in the way."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as error:
        raise Stop(
            f"HOST {host!r} is not an address of this machine ({error.strerror}): set HOST", USAGE
        ) from None
    listening = socket.socket(family, kind, proto)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind(address)
        listening.listen(128)
    except OSError as error:
        listening.close()
        raise _bind_problem(host, port, error) from None
    listening.setblocking(False)
    return listening


def _bind_problem(host: str, port: int, error: OSError) -> Stop:
    if error.errno == errno.EADDRINUSE:
        return Stop(f"port {port} on {host} is already in use: stop the process using it or set PORT")
    if error.errno in (errno.EACCES, errno.EPERM):
        return Stop(f"not allowed to listen on port {port} (ports below 1024 need privileges): set PORT")
    if error.errno == errno.EADDRNOTAVAIL:
        return Stop(f"HOST {host!r} is not an address of this machine: set HOST", USAGE)
    return Stop(f"cannot listen on {host}:{port}: {error.strerror}: check HOST and PORT")


def _announce(url: str, settings: Settings, setup: SetupFlow | None) -> None:
    """Say where the server listens and, in setup mode, print the one-time setup link."""
    log.info("listening", url=url, version=railyard_version())
    if setup is not None:
        # The link carries the setup flow's one-time token: it is meant for the operator's eyes.
        link = setup_url(settings, setup)
        log.warning(f"to register the GitHub App, open {link} (it works until the credentials are saved)")


class AccessLog(AbstractAccessLogger):
    """One line per request on aiohttp's access logger: method, path, status, duration.

    Never the query string (a setup link's token rides in it) nor any header or body.
    """

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        """Log one answered request."""
        self.logger.info(
            "request",
            extra={
                "method": request.method,
                "path": request.path,
                "status": response.status,
                "seconds": round(time, 4),
                "remote": request.remote,
            },
        )


def run_worker(settings: Settings, concurrency: int) -> int:
    """Process the shared queues until SIGINT or SIGTERM (any number may run against PostgreSQL).

    Each worker process also performs outbox effects when the app has credentials.
    """
    _event_loop_policy()
    database = open_database(settings)
    if database.is_sqlite:
        log.warning("extra workers are meant for PostgreSQL; `serve` already runs one")
    return asyncio.run(_work(settings, database, concurrency))


async def _work(settings: Settings, database: Database, concurrency: int) -> int:
    await asyncio.to_thread(database.migrate)
    # Rate-limit pauses, write slots and kept GET answers are shared with every other process.
    loops = worker_loops(settings, database, concurrency)
    github, supervisor = loops.shell.github, loops.supervisor
    await database.open_connections(concurrency)  # now, not in the middle of its first commands
    holders = LeaseHolders(database)  # SQLite: a server starting meanwhile leaves its leases alone
    if database.is_sqlite:
        await asyncio.to_thread(holders.join)
    if github is not None:
        await github.start()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, supervisor.stop.set)
    settle_heap()
    supervisor.start()
    log.info("worker started", worker=loops.worker.name)
    try:
        await supervisor.stop.wait()
    finally:
        await close_all(
            supervisor.close,
            lambda: asyncio.to_thread(holders.leave),
            github.close if github is not None else None,
            lambda: asyncio.to_thread(loops.shell.store.close),
            lambda: asyncio.to_thread(database.close),
            loops.stop_tracing,
        )
    return 0
