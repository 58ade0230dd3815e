"""Path parameters sent to GitHub, percent-encoded so they name exactly what they say.

A branch `a#b` is asked about as `a#b` (`a%23b`), not as `a` with a fragment; a login, a team
slug or a ref is one path segment whatever it contains. The stand-in decodes them as GitHub does.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator
from typing import Any
from urllib.parse import quote

import httpx


def path_segment(name: str, value: Any) -> str:
    """A path parameter percent-encoded, so `a#b`, `a?b` or `..` name what they say: a branch
    `a#b` is asked about as `a#b`, not `a`. `repository` ("owner/name") keeps its one slash and a
    file's `path` its slashes; every other parameter (a ref, a login, a team slug) is one segment."""
    text = str(value)
    if name == "repository":
        return "/".join(quote(part, safe="") for part in text.strip("/").split("/", 1))
    if name == "path":
        return "/".join(quote(part, safe="") for part in text.strip("/").split("/"))
    return quote(text, safe="")


class EncodedPathAuth(httpx.Auth):
    """githubkit's auth flow, shown a request whose path it can parse.

    githubkit rebuilds the route from the *decoded* path to tell app routes from installation
    ones, and a decoded `#` or `?` (a branch `a#b`, sent as `a%23b`) is no valid path: it is
    shown the path with those two replaced, and the header it sets goes on the real request.
    """

    def __init__(self, inner: httpx.Auth) -> None:
        self._inner = inner

    @property
    def inner(self) -> httpx.Auth:
        """githubkit's own flow."""
        return self._inner

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        raw = re.sub(rb"%(23|3[Ff])", b"_", request.url.raw_path)
        probe = httpx.Request(request.method, request.url.copy_with(raw_path=raw))
        flow = self._inner.async_auth_flow(probe)
        sent = await flow.__anext__()
        while sent is not probe:  # the installation token's own request, when none is cached
            sent = await flow.asend((yield sent))
        await flow.aclose()
        if "Authorization" in probe.headers:
            request.headers["Authorization"] = probe.headers["Authorization"]
        yield request
