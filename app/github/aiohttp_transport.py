"""httpx's requests sent by aiohttp's client: the same `httpx.AsyncClient` API for the GitHub
client and the API's token checks, at a third of the CPU of httpx's own transport.

httpx's default transport (httpcore over anyio) costs about 1 ms of CPU per request on the
2-core machine of `docs/benchmarks.md`; aiohttp's client, which railyard already runs for its
server, about 0.3 ms. This transport keeps everything above the socket as httpx does it
(auth flows, headers, the URL, redirects not followed, the body decoded by httpx from its
`Content-Encoding`) and hands only the exchange to aiohttp.

Errors keep the meaning railyard's client gives them (`app.github.client`): only a failure
before the request could leave (no connection: refused, DNS, TLS, the pool's wait) is
`httpx.ConnectError` / `httpx.ConnectTimeout`, which says GitHub cannot have acted. Anything
after (the server closed the connection, a reset, a read timeout, a broken body) is a
`httpx.ReadError` / `httpx.ReadTimeout`, and an answer that is not HTTP a
`httpx.RemoteProtocolError`: a write may have been performed. (The `httpx-aiohttp`
package maps a server that disconnects after the request to `ConnectTimeout`, which would make
a lost answer to a comment look safe to send again; hence this module.)
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ssl
from collections.abc import Mapping
from typing import Any

import aiohttp
import httpx
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

__all__ = ["AiohttpTransport"]


class AiohttpTransport(httpx.AsyncBaseTransport):
    """One aiohttp session (its own connection pool), opened on the first request in the running
    loop, closed by `aclose` (httpx calls it from `AsyncClient.aclose`)."""

    def __init__(
        self, *, connections: int = 100, keepalive_seconds: float = 15.0, trust_env: bool = True
    ) -> None:
        self._connections = connections
        self._keepalive = keepalive_seconds
        self._trust_env = trust_env  # proxies and CA bundles from the environment, as httpx does
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the session's: a session serves one loop
        self._tls: ssl.SSLContext | None = None  # made once: it serves any loop
        self._proxies: dict[tuple[str, str, int | None], tuple[URL | None, aiohttp.BasicAuth | None]] = {}

    def open(self) -> None:
        """Open the session now, in the running loop, rather than on the first request: its TLS
        context loads the CA bundle, 42 to 55 ms of CPU once per process (measured alone),
        which a first command would otherwise wait on (`GitHubClient.start`). Nothing connects
        until a request; a request in another loop gets a session of its own (the TLS context
        is kept)."""
        self._open()

    def _open(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            if self._session is not None and self._loop is not None and self._loop.is_closed():
                self._session.detach()  # its loop is gone, and with it anything to close
            if self._tls is None:
                self._tls = httpx.create_ssl_context(trust_env=self._trust_env)
            connector = aiohttp.TCPConnector(
                limit=self._connections, keepalive_timeout=self._keepalive, ssl=self._tls
            )
            self._loop = loop
            self._session = aiohttp.ClientSession(
                connector=connector,
                cookie_jar=aiohttp.DummyCookieJar(),  # GitHub's API needs none; keep no state
                # The environment's proxy is looked up once per origin (`_proxy`), not by aiohttp
                # on every request (which also reads ~/.netrc each time).
                trust_env=False,
                auto_decompress=False,  # httpx decodes the body from its Content-Encoding
                skip_auto_headers=("User-Agent",),  # the request's own headers are sent as they are
            )
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send `request` and read the whole answer; errors as httpx's, by whether it left."""
        session = self._open()
        body = await request.aread()
        proxy, proxy_auth = self._proxy(request.url)
        try:
            async with session.request(
                request.method,
                str(request.url),
                headers=_headers(request),
                data=body or None,
                allow_redirects=False,
                compress=None,
                timeout=_timeout(request.extensions.get("timeout", {})),
                server_hostname=request.extensions.get("sni_hostname"),
                proxy=proxy,
                proxy_auth=proxy_auth,
            ) as answer:
                content = await answer.read()
                status, raw_headers, reason = answer.status, answer.raw_headers, answer.reason
        except Exception as error:
            mapped = _httpx_error(error, request)
            if mapped is error:
                raise
            raise mapped from error
        extensions: dict[str, Any] = {"http_version": b"HTTP/1.1"}
        if reason:
            extensions["reason_phrase"] = reason.encode("latin-1", "replace")
        return httpx.Response(
            status, headers=list(raw_headers), content=content, request=request, extensions=extensions
        )

    async def get(self, url: str, headers: Mapping[str, str], timeout: float) -> httpx.Response:
        """GET `url` with exactly `headers`, past httpx's client: the API's token checks, which
        need no auth flow, redirects or cookies, at half the CPU. Errors as `handle_async_request`'s."""
        return await self.send("GET", url, headers, None, timeout)

    async def send(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes | None, timeout: float
    ) -> httpx.Response:
        """`get` for any method, with `body` as it is (the caller sets its Content-Type)."""
        request = httpx.Request(method, parsed_url(url), headers=headers)
        session = self._open()
        proxy, proxy_auth = self._proxy(request.url)
        try:
            async with session.request(
                method,
                url,
                headers=headers,
                data=body,
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(
                    total=None, sock_connect=timeout, sock_read=timeout, connect=timeout
                ),
                proxy=proxy,
                proxy_auth=proxy_auth,
            ) as answer:
                content = await answer.read()
                status, raw_headers = answer.status, answer.raw_headers
        except Exception as error:
            mapped = _httpx_error(error, request)
            if mapped is error:
                raise
            raise mapped from error
        return httpx.Response(status, headers=list(raw_headers), content=content, request=request)

    def _proxy(self, url: httpx.URL) -> tuple[URL | None, aiohttp.BasicAuth | None]:
        """The proxy `HTTPS_PROXY`/`HTTP_PROXY` name for the URL's origin (none under `NO_PROXY`),
        read from the environment the first time the origin is asked, as httpx reads it once."""
        origin = (url.scheme, url.host, url.port)
        found = self._proxies.get(origin)
        if found is None:
            found = (None, None)
            if self._trust_env:
                with contextlib.suppress(LookupError):
                    found = get_env_proxy_for_url(URL(str(url)))
            self._proxies[origin] = found
        return found

    async def aclose(self) -> None:
        """Close the session and its connections."""
        if self._session is not None:
            await self._session.close()
            self._session = None


def _httpx_error(error: Exception, request: httpx.Request) -> Exception:
    """aiohttp's error as httpx's, by whether the request can have left (others unchanged)."""
    if isinstance(error, aiohttp.ConnectionTimeoutError):  # no connection in time: nothing was sent
        return httpx.ConnectTimeout(str(error) or "connect timeout", request=request)
    if isinstance(error, aiohttp.ClientConnectorError):  # refused, DNS, TLS: nothing was sent
        return httpx.ConnectError(str(error) or type(error).__name__, request=request)
    if isinstance(error, TimeoutError | aiohttp.SocketTimeoutError):
        return httpx.ReadTimeout(str(error) or "read timeout", request=request)
    if isinstance(error, aiohttp.ClientConnectionError | aiohttp.ClientPayloadError):
        # Sent, or perhaps sent: the server closed or reset the connection, the body broke.
        return httpx.ReadError(str(error) or type(error).__name__, request=request)
    if isinstance(error, aiohttp.ClientResponseError):  # the answer is not HTTP: sent all the same
        return httpx.RemoteProtocolError(error.message or type(error).__name__, request=request)
    if isinstance(error, aiohttp.InvalidURL | aiohttp.NonHttpUrlClientError):
        return httpx.UnsupportedProtocol(str(error), request=request)
    return error


def _headers(request: httpx.Request) -> list[tuple[str, str]]:
    """The request's headers as httpx built them, less what aiohttp sets from the body it sends."""
    return [
        (name.decode("latin-1"), value.decode("latin-1"))
        for name, value in request.headers.raw
        if name.lower() not in (b"content-length", b"transfer-encoding")
    ]


def _timeout(timeout: dict[str, float | None]) -> aiohttp.ClientTimeout:
    """httpx's timeouts: the pool's wait and the connect as aiohttp's connect, the read per read."""
    return aiohttp.ClientTimeout(
        total=None,
        connect=timeout.get("pool"),
        sock_connect=timeout.get("connect"),
        sock_read=timeout.get("read"),
    )


@functools.lru_cache(maxsize=4096)
def parsed_url(address: str) -> httpx.URL:
    """`httpx.URL(address)`, kept: httpx parses a URL character by character, which cost a
    fifth of a conditional GET's CPU, and railyard asks for the same few addresses over and
    over (an issue, a team membership, the configuration file). Bounded; URLs are immutable."""
    return httpx.URL(address)
