"""The collaborators handlers receive, built once per process by `create_services`."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from app.database import Database
from app.service import TicketService


@dataclass(frozen=True)
class Services:
    """Everything a handler may use; passed in, never imported as a global."""

    database: Database
    tickets: TicketService
    clock: Callable[[], float] = field(default=time.time)


def create_services(database: Database, clock: Callable[[], float] = time.time) -> Services:
    """Wire the collaborators for one process."""
    return Services(database=database, tickets=TicketService(database), clock=clock)
