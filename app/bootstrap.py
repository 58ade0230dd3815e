"""The collaborators handlers receive, built once per process by `create_services`."""

from __future__ import annotations

import base64
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from app.github.ancestry import Ancestry
from app.github.client import GitHubClient, NotFound
from app.github.config import CONFIG_PATH, ConfigLoader, RepoFile
from app.store.database import Database
from app.store.tickets import TicketService
from app.views.surfaces import surfaces_for


@dataclass(frozen=True)
class Services:
    """Everything a handler may use; passed in, never imported as a global."""

    database: Database
    tickets: TicketService
    clock: Callable[[], float] = field(default=time.time)
    github: GitHubClient | None = None
    configs: ConfigLoader | None = None
    app_id: int | None = None
    ancestry: Ancestry | None = None


def config_fetcher(github: GitHubClient) -> Callable[[int, str], Awaitable[RepoFile | None]]:
    """Read `.github/railyard.yml` from a repository's default branch (None when absent)."""

    async def fetch(installation_id: int, repository: str) -> RepoFile | None:
        try:
            found = await github.call("get_file", installation_id, repository=repository, path=CONFIG_PATH)
        except NotFound:
            return None
        if not isinstance(found, dict) or found.get("type") != "file":
            return None
        text = base64.b64decode(found.get("content") or "").decode("utf-8", errors="replace")
        return RepoFile(sha=str(found.get("sha")), text=text)

    return fetch


def create_services(
    database: Database,
    clock: Callable[[], float] = time.time,
    github: GitHubClient | None = None,
    app_id: int | None = None,
) -> Services:
    """Wire the collaborators for one process."""
    configs = ConfigLoader(config_fetcher(github)) if github is not None else None
    return Services(
        database=database,
        tickets=TicketService(database, surfaces=surfaces_for),
        clock=clock,
        github=github,
        configs=configs,
        app_id=app_id,
        ancestry=Ancestry(github) if github is not None else None,
    )
