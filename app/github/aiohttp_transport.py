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

from typing import Any

import aiohttp
import httpx

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

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                limit=self._connections,
                keepalive_timeout=self._keepalive,
                ssl=httpx.create_ssl_context(trust_env=self._trust_env),
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                cookie_jar=aiohttp.DummyCookieJar(),  # GitHub's API needs none; keep no state
                trust_env=self._trust_env,
                auto_decompress=False,  # httpx decodes the body from its Content-Encoding
                skip_auto_headers=("User-Agent",),  # the request's own headers are sent as they are
            )
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send `request` and read the whole answer; errors as httpx's, by whether it left."""
        session = self._open()
        body = await request.aread()
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
            ) as answer:
                content = await answer.read()
                status, raw_headers, reason = answer.status, answer.raw_headers, answer.reason
        except aiohttp.ConnectionTimeoutError as error:  # no connection in time: nothing was sent
            raise httpx.ConnectTimeout(str(error) or "connect timeout", request=request) from error
        except aiohttp.ClientConnectorError as error:  # refused, DNS, TLS: nothing was sent
            raise httpx.ConnectError(str(error) or type(error).__name__, request=request) from error
        except (TimeoutError, aiohttp.SocketTimeoutError) as error:
            raise httpx.ReadTimeout(str(error) or "read timeout", request=request) from error
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as error:
            # Sent, or perhaps sent: the server closed or reset the connection, the body broke.
            raise httpx.ReadError(str(error) or type(error).__name__, request=request) from error
        except aiohttp.ClientResponseError as error:  # the answer is not HTTP: sent all the same
            raise httpx.RemoteProtocolError(error.message or type(error).__name__, request=request) from error
        except (aiohttp.InvalidURL, aiohttp.NonHttpUrlClientError) as error:
            raise httpx.UnsupportedProtocol(str(error), request=request) from error
        extensions: dict[str, Any] = {"http_version": b"HTTP/1.1"}
        if reason:
            extensions["reason_phrase"] = reason.encode("latin-1", "replace")
        return httpx.Response(
            status, headers=list(raw_headers), content=content, request=request, extensions=extensions
        )

    async def aclose(self) -> None:
        """Close the session and its connections."""
        if self._session is not None:
            await self._session.close()
            self._session = None


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
