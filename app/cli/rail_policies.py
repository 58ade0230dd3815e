"""The rail policy `status --json` and `tickets --json` judge `blocked_by` under: each repository's
`checks.required`, as the status comment, `/status` and the HTTP API judge it.

The database records what happened, not a repository's configuration (an event carries only its
`policy_version`), so the command line reads `.github/railyard.yml` as the server does: through
the app's credentials, the shared HTTP cache (an unchanged file is a 304, no rate limit spent) and
the rate-limit pause every process honours. Without credentials, or when GitHub cannot give the
file, the default policy stands in (every failing check but railyard's own) and a line on stderr
says so: the JSON on stdout is never mixed with it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING, TextIO

from app.store.database import Database
from app.store.installations import installations_of_tickets
from policies.rails import RailPolicy

if TYPE_CHECKING:
    from app.settings import Settings

DEFAULTS_NOTE = "railyard: blocked_by judged under the default checks (every failing check but railyard's)"
READ_DEADLINE = 20.0
"""Seconds the command waits for every repository's file at most. Each GitHub call may take the
client's timeout (15 s) when GitHub does not answer, and the files were read one after another:
`tickets --json` over forty repositories waited ten minutes before printing anything. They are
read side by side now, and what is not read by then is judged under the defaults (stderr says so)."""
AT_ONCE = 8
"""How many repositories' files are read at the same time."""


def rail_policies(
    settings: Settings | None, database: Database, repositories: Iterable[str], err: TextIO
) -> dict[str, RailPolicy]:
    """Each repository's rail policy, keyed by its name casefolded; a repository missing from the
    answer is judged under the defaults (and stderr says why)."""
    wanted = sorted({repository.casefold() for repository in repositories})
    if not wanted:
        return {}
    if settings is None or not settings.configured:
        err.write(f"{DEFAULTS_NOTE}: no app credentials to read .github/railyard.yml.\n")
        return {}
    installations = installations_of_tickets(database, wanted)
    broken: list[str] = []
    found, unread = asyncio.run(_read(settings, database, installations, broken))
    if unread:
        err.write(f"{DEFAULTS_NOTE} for {_names(unread)}: its configuration could not be read now.\n")
    if broken:
        err.write(
            f"{DEFAULTS_NOTE} for {_names(broken)}: its configuration cannot be used (railyard validate).\n"
        )
    return found


def _names(repositories: list[str]) -> str:
    shown = ", ".join(repositories[:5])
    return shown + (f" and {len(repositories) - 5} more" if len(repositories) > 5 else "")


async def _read(
    settings: Settings, database: Database, installations: dict[str, int | None], broken: list[str]
) -> tuple[dict[str, RailPolicy], list[str]]:
    """The policies read, and the repositories not read; `broken` gets those whose file (or the
    file it starts from) cannot be used: the defaults are in force there, as the server shows."""
    from app.bootstrap import command_shell  # the GitHub client's imports only when asked
    from app.github.api_errors import GitHubError
    from handlers.errors import TransientError

    found: dict[str, RailPolicy] = {}
    unread = [repository for repository, installation in installations.items() if installation is None]
    slots = asyncio.Semaphore(AT_ONCE)
    async with command_shell(settings, database) as shell:
        loader = shell.loader

        async def read(repository: str, installation: int) -> None:
            assert loader is not None
            async with slots:
                try:
                    loaded = await loader.load(installation, repository)
                except (GitHubError, TransientError):
                    return
            found[repository] = loaded.config.to_rail_policy()
            if loaded.error is not None:
                broken.append(repository)

        reads = [
            asyncio.ensure_future(read(repository, installation))
            for repository, installation in installations.items()
            if installation is not None and loader is not None
        ]
        if reads:
            done, late = await asyncio.wait(reads, timeout=READ_DEADLINE)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
            for task in done:
                task.result()  # anything but GitHub's failures is a fault, not a file unread
    unread += [
        repository
        for repository, installation in installations.items()
        if installation is not None and repository not in found
    ]
    return found, sorted(set(unread))
