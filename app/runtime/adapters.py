"""One process's adapters behind the handlers' ports, as `app.bootstrap.wire` builds them.

A record and nothing more: the server's routes, the CLI and the loops read what they need
from it; none of them builds one.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.github.client import GitHubClient
from app.github.config_loader import ConfigLoader
from app.store.database import Database
from app.store.tickets import TicketService
from app.store.unit import SqlStore
from handlers.ports import Clock, Services


@dataclass
class Adapters:
    """The database, the ticket store and its unit of work, GitHub, the config loader, the ports."""

    database: Database
    clock: Clock
    github: GitHubClient | None
    app_id: int | None
    tickets: TicketService
    loader: ConfigLoader | None
    store: SqlStore
    ports: Services
