"""The Authorization header githubkit's auth flow last put on an installation's GET, kept so the
next GET of the same route can skip httpx's client and the flow (`GitHubClient._request`).

githubkit keeps each installation token until a minute before GitHub says it expires (an hour);
a header kept here is reused for at most `max_age` seconds, so it is never older than the token
githubkit itself would send, and a 401 (a token revoked: the app suspended or uninstalled)
forgets every header of the installation, so the next call runs the flow again. Headers are
kept per route template: githubkit signs some routes with the app's JWT instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable

MAX_AGE = 300.0
MAX_KEPT = 4096


class SeenHeaders:
    """(installation, route template) -> the header and when it was seen, bounded."""

    def __init__(self, max_age: float = MAX_AGE, clock: Callable[[], float] = time.monotonic) -> None:
        self._max_age, self._clock = max_age, clock
        self._headers: dict[tuple[int, str], tuple[str, float]] = {}

    def get(self, installation_id: int, template: str) -> str | None:
        """The header to send, when one was seen less than `max_age` ago."""
        seen = self._headers.get((installation_id, template))
        if seen is None or self._clock() - seen[1] >= self._max_age:
            return None
        return seen[0]

    def keep(self, installation_id: int, template: str, header: str | None) -> None:
        """Remember the header the flow just set (nothing when it set none)."""
        if not header:
            return
        if len(self._headers) >= MAX_KEPT:
            self._headers.clear()  # bounded; each entry is one flow away
        self._headers[(installation_id, template)] = (header, self._clock())

    def forget(self, installation_id: int) -> None:
        """GitHub refused the installation's token: every header of it goes."""
        for key in [key for key in self._headers if key[0] == installation_id]:
            del self._headers[key]
