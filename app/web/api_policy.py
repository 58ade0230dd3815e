"""The rail policy an API answer judges `blocked_by` under: the repository's, as the status comment
and the rail itself are judged, without a GitHub call per read.

The configuration this process last read for the repository counts, however long ago (the loader's
`known`: webhooks and commands read it, and a push to the default branch is followed by a fresh
read). A repository this process never read is read once now, through the loader's cache; from then
on it is known. When it cannot be read (GitHub down, the file unreachable) the default policy
stands in: every check but railyard's own counts, as before a configuration is known, and the read
is answered, never turned into an error by it.
"""

from __future__ import annotations

import structlog

from app.github.api_errors import GitHubError
from app.github.config_loader import ConfigLoader
from handlers.errors import TransientError
from policies.rails import RailPolicy

log = structlog.get_logger(__name__)


async def read_policy(loader: ConfigLoader | None, installation_id: int, repository: str) -> RailPolicy:
    """The repository's rail policy: known here, else read once now, else the default."""
    if loader is None:  # no GitHub credentials: no configuration can be read
        return RailPolicy()
    known = loader.known(repository)
    if known is not None:
        return known.config.to_rail_policy()
    try:
        loaded = await loader.load(installation_id, repository)
    except (GitHubError, TransientError) as error:
        log.warning("api: configuration unreadable, blocked_by under the defaults", error=str(error)[:200])
        return RailPolicy()
    return loaded.config.to_rail_policy()
