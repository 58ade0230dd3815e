"""The one place that wires: the adapters behind the handlers' ports, and the loops every process
runs (`railyard serve` and `railyard worker` build theirs here, the same way).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, NoReturn

from app.github.ancestry import Ancestry
from app.github.client import GitHubClient
from app.github.config import ConfigLoader
from app.github.reads import ConfigsAdapter, GitHubReadsAdapter, RolesAdapter, config_fetcher
from app.runtime.metrics import Metrics
from app.runtime.outbox import Outbox
from app.runtime.worker import Worker
from app.store.budgets import SqlBudgets
from app.store.database import Database
from app.store.tickets import TicketService
from app.store.unit import SqlStore
from app.views.answers import render
from app.views.surfaces import Surfaces, surfaces_for
from handlers.ports import Clock, Services
from handlers.routing import Router


class _Unwired:
    """Stands for GitHub in a process without app credentials: any use fails the delivery, loudly."""

    def __init__(self, what: str) -> None:
        self._what = what

    def __getattr__(self, name: str) -> Any:
        return self._fail

    def _fail(self, *args: object, **kwargs: object) -> NoReturn:
        raise RuntimeError(f"{self._what} is not available: set APP_ID, PRIVATE_KEY and WEBHOOK_SECRET")


@dataclass
class Shell:
    """One process's adapters: the database and the ticket store, GitHub, the config loader."""

    database: Database
    clock: Clock = time.time
    github: GitHubClient | None = None
    app_id: int | None = None
    tickets: TicketService = field(init=False)
    loader: ConfigLoader | None = field(init=False)
    store: SqlStore = field(init=False)
    ports: Services = field(init=False)

    def __post_init__(self) -> None:
        self.tickets = TicketService(self.database, surfaces=surfaces_for)
        self.store = SqlStore(self.database, render=render, surfaces=surfaces_for, clock=self.clock)
        github = self.github
        self.loader = ConfigLoader(config_fetcher(github)) if github is not None else None
        unwired: Any = _Unwired("GitHub")
        self.ports = Services(
            store=self.store,
            github=GitHubReadsAdapter(github) if github is not None else unwired,
            configs=ConfigsAdapter(self.loader) if self.loader is not None else unwired,
            roles=RolesAdapter(github) if github is not None else unwired,
            ancestry=Ancestry(github) if github is not None else unwired,
            app_id=self.app_id if self.app_id is not None else 0,
            clock=self.clock,
            budgets=SqlBudgets(self.database, self.clock),
        )

    def worker(self, router: Router, metrics: Metrics, **options: Any) -> Worker:
        """The worker that runs stored deliveries through `router`'s handlers."""
        return Worker(self.database, self.ports, router, metrics, clock=self.clock, **options)

    def outbox(self, metrics: Metrics, **options: Any) -> Outbox | None:
        """The outbox that performs GitHub writes (None without app credentials)."""
        if self.github is None or self.app_id is None:
            return None
        renderers = self.surfaces().renderers()
        return Outbox(self.database, self.github, metrics, app_id=self.app_id, renderers=renderers, **options)

    def surfaces(self) -> Surfaces:
        """The renderers of the status comment and the check-run."""
        return Surfaces(self.database, self.tickets, self.loader, self.github)


def wire(
    database: Database,
    clock: Clock = time.time,
    github: GitHubClient | None = None,
    app_id: int | None = None,
) -> Shell:
    """Wire the adapters for one process."""
    return Shell(database, clock, github, app_id)
