"""Which calls as an installation (reads and writes) may skip httpx's client and githubkit's
auth flow: the routes the flow has been seen to sign with the installation token, while
githubkit still keeps that token (`GitHubClient._request`).

The token sent is always githubkit's own, read from its cache, which keeps it until a minute
before GitHub said it expires: nothing is kept here that could outlive it. Routes are kept by
template, because githubkit signs some routes with the app's JWT instead, and a route is only
known once the flow has signed it.
"""

from __future__ import annotations

import httpx
from githubkit.auth.app import AppAuth
from githubkit.utils import UNSET

MAX_ROUTES = 1024
_SCHEME = "token "


class InstallationRoutes:
    """The route templates githubkit signed with an installation token (bounded)."""

    def __init__(self) -> None:
        self._routes: set[str] = set()

    def signed(self, template: str) -> bool:
        """Whether the flow has signed `template` with an installation token."""
        return template in self._routes

    def saw(self, template: str, request: httpx.Request) -> None:
        """Note what the flow put on a request of `template`."""
        if request.headers.get("Authorization", "").startswith(_SCHEME):
            if len(self._routes) >= MAX_ROUTES:
                self._routes.clear()  # bounded; each one is one flow away
            self._routes.add(template)


async def kept_token_header(flow: httpx.Auth) -> str | None:
    """`Authorization` with the installation token githubkit keeps for `flow` now, read through
    its asynchronous cache: this process's memory, then (`app.store.token_cache`) a token
    another process stored, so a process's first call for an installation needs neither the
    auth flow nor a token of its own. None when none is kept anywhere (expired, never fetched,
    or not an installation's flow): the flow then asks GitHub for one.

    Reads githubkit 0.16's token cache under the key its flow uses (githubkit is pinned).
    """
    key = installation_token_key(flow)
    if key is None:
        return None
    assert isinstance(flow, AppAuth)
    storage = await flow.github.config.cache_strategy.get_async_cache_storage()
    token = await storage.aget(key)
    return f"{_SCHEME}{token}" if isinstance(token, str) and token else None


async def forget_installation_token(flow: httpx.Auth) -> None:
    """Drop the installation token githubkit keeps for `flow` (GitHub refused it): the next call
    asks for a new one. A cache that is shared (`app.store.token_cache`) forgets it for every
    process; githubkit's own keeps it in a dict."""
    key = installation_token_key(flow)
    if key is None:
        return
    assert isinstance(flow, AppAuth)
    storage = await flow.github.config.cache_strategy.get_async_cache_storage()
    forget = getattr(storage, "forget", None)
    if forget is not None:
        await forget(key)
    else:
        getattr(storage, "_cache", {}).pop(key, None)


def installation_token_key(flow: httpx.Auth) -> str | None:
    """The key githubkit keeps `flow`'s installation token under (None: not an installation's)."""
    if not isinstance(flow, AppAuth) or flow.installation_id is UNSET:
        return None
    return flow._get_installation_cache_key()
