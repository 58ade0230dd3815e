"""Conditional requests as api.github.com answers them.

Every successful GET carries a weak ETag (`W/"<hex>"`) computed from the body it sends; a GET
whose `If-None-Match` names that ETag (or `*`) is answered 304 with no body, and a 304 does
not count against the primary rate limit. GitHub's ETags also vary with the credential (an
installation token renewed hourly gets new ones): `StandinState.etag_per_credential` models
that when a test needs it.
"""

from __future__ import annotations

import hashlib

from aiohttp import web


def etag_of(body: bytes, credential: str = "") -> str:
    """The weak ETag of a body (and of the credential, where ETags vary with it)."""
    digest = hashlib.sha256(credential.encode() + b"\0" + body).hexdigest()[:32]
    return f'W/"{digest}"'


def _opaque(tag: str) -> str:
    """A tag without its weak prefix: If-None-Match compares weakly (RFC 9110, 13.1.2)."""
    tag = tag.strip()
    return tag[2:] if tag.startswith("W/") else tag


def matches(if_none_match: str, etag: str) -> bool:
    """Whether an If-None-Match header names `etag` (any of a list, or `*`)."""
    wanted = _opaque(etag)
    return any(part.strip() == "*" or _opaque(part) == wanted for part in if_none_match.split(","))


def conditional(request: web.Request, response: web.StreamResponse, credential: str) -> web.StreamResponse:
    """Tag a successful GET's answer; a 304 without a body when the client's ETag still matches."""
    if request.method != "GET" or not 200 <= response.status < 300 or not isinstance(response, web.Response):
        return response
    body = response.body if isinstance(response.body, bytes) else b""
    etag = etag_of(body, credential)
    if matches(request.headers.get("If-None-Match", ""), etag):
        return web.Response(status=304, headers={"ETag": etag})
    response.headers["ETag"] = etag
    return response
