"""The rail policy an API answer judges `blocked_by` under: the repository's, as the status comment
and the rail itself are judged, without a GitHub call per read.

The configuration comes through the process's `ConfigLoader`, as a command's does: what it read
for the repository in the last `max_age` (a minute) is used as it is; older, or never read here, it
is read again (a conditional GET: GitHub answers 304 for an unchanged file, which costs no rate
limit). So a process that serves only the API, and sees no push, follows a change to the file
within a minute. When the file cannot be read now (GitHub down, the file unreachable) the
configuration last read stands in, however old, else the default policy: every check but
railyard's own counts, as before a configuration is known. The read is answered either way,
never turned into an error by it, and the file is not asked for again for a minute
(`RETRY_UNREADABLE`): every read while GitHub fails would otherwise be one more call on the
installation's quota, which any account that can read a public repository could make.
"""

from __future__ import annotations

import time
import weakref
from collections import OrderedDict

import structlog

from app.github.api_errors import GitHubError
from app.github.config_loader import ConfigLoader
from handlers.errors import TransientError
from policies.rails import RailPolicy

log = structlog.get_logger(__name__)

RETRY_UNREADABLE = 60.0
"""Seconds a repository whose file could not be read is judged without asking GitHub again."""
_KEPT_AT_MOST = 1024
# Per loader (a process has one): repository -> when its read failed (monotonic seconds).
_UNREADABLE: weakref.WeakKeyDictionary[ConfigLoader, OrderedDict[str, float]] = weakref.WeakKeyDictionary()


async def read_policy(loader: ConfigLoader | None, installation_id: int, repository: str) -> RailPolicy:
    """The repository's rail policy: read through the loader (at most a minute old), else the
    last one read, else the default."""
    if loader is None:  # no GitHub credentials: no configuration can be read
        return RailPolicy()
    key, now = repository.casefold(), time.monotonic()
    unreadable = _UNREADABLE.setdefault(loader, OrderedDict())
    failed = unreadable.get(key)
    if failed is not None and now - failed < RETRY_UNREADABLE:
        known = loader.known(repository)
        return known.config.to_rail_policy() if known is not None else RailPolicy()
    try:
        loaded = await loader.load(installation_id, repository)
    except (GitHubError, TransientError) as error:
        unreadable[key] = now
        unreadable.move_to_end(key)
        if len(unreadable) > _KEPT_AT_MOST:
            unreadable.popitem(last=False)
        known = loader.known(repository)
        if known is not None:
            log.warning(
                "api: configuration unreadable, blocked_by under the last one read", error=str(error)[:200]
            )
            return known.config.to_rail_policy()
        log.warning("api: configuration unreadable, blocked_by under the defaults", error=str(error)[:200])
        return RailPolicy()
    unreadable.pop(key, None)
    return loaded.config.to_rail_policy()
