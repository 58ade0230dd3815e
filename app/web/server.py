"""The web server: `POST /webhooks` (`webhook_door.py`), `GET /healthz` and `GET /metrics`
(`health.py`), the API, the pages, and the loops beside them (`lifecycle.py`).

`app.bootstrap.server` builds what it serves; `create_app` only adds the routes and the
lifecycle. Webhook answers follow SPEC: 202 once stored, 200 for a delivery id already
stored, 401 for a missing or wrong signature, 400 for missing GitHub headers or a body that
is not a JSON object, 413 past 25 MB, 415 for a `Content-Encoding` other than identity (no
request body is ever inflated), 503 in setup mode and when the delivery cannot be stored
within `STORE_TIMEOUT` (4 s, inside GitHub's 10 s; GitHub records the failure and recovery
redelivers it). Bad input never gets a 5xx.

GitHub signs the body, not `X-GitHub-Event`: a signed payload without the shape of its
event (`app.contracts.webhook_payloads.SHAPES`) is stored as `rejected`, answered 202 and never processed,
so a body replayed under another event's name changes nothing. Nothing an unsigned request
sends becomes state or a metric label (events are counted under known names or `other`);
refusals are logged at most once a minute per reason, with the count of those left out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from app.github.users import UserReads
from app.runtime.adapters import Adapters
from app.runtime.domain_gauges import DomainGauges
from app.runtime.maintenance import Maintenance
from app.runtime.metrics import Metrics
from app.runtime.outbox import Outbox
from app.runtime.supervisor import Supervisor
from app.runtime.watchdog import Watchdog
from app.runtime.worker import Worker
from app.settings import Settings
from app.store.intake import MAX_BODY_BYTES, IntakeWriter
from app.web.api_routes import AgentApi
from app.web.app_keys import (
    DATABASE,
    DOMAIN_GAUGES,
    GITHUB,
    MAINTENANCE,
    METRICS,
    OUTBOX,
    SETTINGS,
    SETUP,
    SHELL,
    SUPERVISOR,
    WATCHDOG,
    WORKER,
    WRITER,
)
from app.web.bodies import BODIES, BodyBudget
from app.web.health import health, serve_metrics
from app.web.lifecycle import lifecycle
from app.web.page_views import install as install_pages
from app.web.responses import answer, guarded
from app.web.setup import SetupFlow, add_setup_routes
from app.web.webhook_door import SETUP_MODE_MESSAGE, WebhookReceiver
from handlers.routing import Router

__all__ = ["SETUP", "SUPERVISOR", "WORKER", "WRITER", "Served", "create_app"]


async def _api_in_setup(request: web.Request) -> web.Response:
    """The API in setup mode: nothing to serve until the app is registered."""
    return answer(503, SETUP_MODE_MESSAGE)


async def index(request: web.Request) -> web.Response:
    """A one-line description of what is running (in setup mode `/` is the setup page instead)."""
    return web.Response(text="railyard is running. Webhooks go to POST /webhooks.\n")


@dataclass
class Served:
    """What one server process serves, built by `app.bootstrap.server`: the adapters, the intake
    writer, the loops (with credentials and a worker) and their supervisor, the setup flow (setup
    mode) and the user-token reads (the API's)."""

    settings: Settings
    shell: Adapters
    metrics: Metrics
    writer: IntakeWriter
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
    if settings.configured:
        app[DOMAIN_GAUGES] = DomainGauges(shell.database, metrics, clock)
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
    app.cleanup_ctx.append(lifecycle)
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
