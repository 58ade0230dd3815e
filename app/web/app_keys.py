"""The keys of what the server keeps on its `web.Application` (set by `create_app`)."""

from __future__ import annotations

from aiohttp import web

from app.github.client import GitHubClient
from app.runtime.adapters import Adapters
from app.runtime.domain_gauges import DomainGauges
from app.runtime.maintenance import Maintenance
from app.runtime.metrics import Metrics
from app.runtime.outbox import Outbox
from app.runtime.supervisor import Supervisor
from app.runtime.watchdog import Watchdog
from app.runtime.worker import Worker
from app.settings import Settings
from app.store.database import Database
from app.store.intake import IntakeWriter
from app.web.setup import SetupFlow

SETTINGS: web.AppKey[Settings] = web.AppKey("settings", Settings)
DATABASE: web.AppKey[Database] = web.AppKey("database", Database)
WRITER: web.AppKey[IntakeWriter] = web.AppKey("writer", IntakeWriter)
METRICS: web.AppKey[Metrics] = web.AppKey("metrics", Metrics)
DOMAIN_GAUGES: web.AppKey[DomainGauges] = web.AppKey("domain_gauges", DomainGauges)
WORKER: web.AppKey[Worker] = web.AppKey("worker", Worker)
GITHUB: web.AppKey[GitHubClient] = web.AppKey("github", GitHubClient)
OUTBOX: web.AppKey[Outbox] = web.AppKey("outbox", Outbox)
MAINTENANCE: web.AppKey[Maintenance] = web.AppKey("maintenance", Maintenance)
WATCHDOG: web.AppKey[Watchdog] = web.AppKey("watchdog", Watchdog)
SUPERVISOR: web.AppKey[Supervisor] = web.AppKey("supervisor", Supervisor)
SHELL: web.AppKey[Adapters] = web.AppKey("shell", Adapters)
SETUP: web.AppKey[SetupFlow] = web.AppKey("setup", SetupFlow)
