"""The rail policy an API answer judges `blocked_by` under: the repository's, as the status comment
and the rail itself are judged, without a GitHub call per read.

The configuration comes through the process's `ConfigLoader`, as a command's does: what it read
for the repository in the last `max_age` (a minute) is used as it is; older, or never read here, it
is read again (a conditional GET: GitHub answers 304 for an unchanged file, which costs no rate
limit). So a process that serves only the API, and sees no push, follows a change to the file
within a minute. When the file cannot be read now (GitHub down, the file unreachable) the
configuration last read stands in, however old, else the default policy: every check but
railyard's own counts, as before a configuration is known. The read is answered either way,
never turned into an error by it.
"""

from __future__ import annotations

import structlog

from app.github.api_errors import GitHubError
from app.github.config_loader import ConfigLoader
from handlers.errors import TransientError
from policies.rails import RailPolicy

log = structlog.get_logger(__name__)


async def read_policy(loader: ConfigLoader | None, installation_id: int, repository: str) -> RailPolicy:
    """The repository's rail policy: read through the loader (at most a minute old), else the
    last one read, else the default."""
    if loader is None:  # no GitHub credentials: no configuration can be read
        return RailPolicy()
    try:
        loaded = await loader.load(installation_id, repository)
    except (GitHubError, TransientError) as error:
        known = loader.known(repository)
        if known is not None:
            log.warning(
                "api: configuration unreadable, blocked_by under the last one read", error=str(error)[:200]
            )
            return known.config.to_rail_policy()
        log.warning("api: configuration unreadable, blocked_by under the defaults", error=str(error)[:200])
        return RailPolicy()
    return loaded.config.to_rail_policy()
