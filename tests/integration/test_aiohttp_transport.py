"""The aiohttp transport under httpx, against a real server on loopback: what is sent arrives as
httpx built it, answers come back decoded, and errors say whether the request could have left
(a write whose answer was lost must look ambiguous, never safe to send again)."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
from collections.abc import AsyncIterator

import httpx
import pytest
from aiohttp import web

from app.github.aiohttp_transport import AiohttpTransport

pytestmark = pytest.mark.asyncio


async def _echo(request: web.Request) -> web.Response:
    body = await request.read()
    seen = {"method": request.method, "path": request.path_qs, "headers": dict(request.headers)}
    return web.json_response({**seen, "body": body.decode()}, headers={"ETag": '"e1"'})


async def _not_modified(request: web.Request) -> web.Response:
    return web.Response(status=304, headers={"ETag": '"e1"'})


async def _gzipped(request: web.Request) -> web.Response:
    return web.Response(body=gzip.compress(b'{"ok": true}'), headers={"Content-Encoding": "gzip"})


async def _hang_up(request: web.Request) -> web.StreamResponse:
    await request.read()  # the request arrived whole: GitHub may have acted on it
    assert request.transport is not None
    request.transport.close()
    return web.Response()


async def _slow(request: web.Request) -> web.Response:
    await asyncio.sleep(2)
    return web.Response()


@pytest.fixture
async def server() -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_route("*", "/echo", _echo)
    app.router.add_get("/same", _not_modified)
    app.router.add_get("/gzip", _gzipped)
    app.router.add_post("/hang-up", _hang_up)
    app.router.add_get("/slow", _slow)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}"
    await runner.cleanup()


def _client(base: str, timeout: float = 5.0) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=base, transport=AiohttpTransport(), timeout=timeout)


async def test_a_request_arrives_as_httpx_built_it(server: str) -> None:
    async with _client(server) as client:
        response = await client.post(
            "/echo?page=2",
            json={"body": "Working on it ✓"},
            headers={"Authorization": "token t1", "If-None-Match": '"e0"', "User-Agent": "railyard"},
        )
    seen = response.json()
    assert response.status_code == 200 and response.headers["etag"] == '"e1"'
    assert seen["method"] == "POST" and seen["path"] == "/echo?page=2"
    assert json.loads(seen["body"]) == {"body": "Working on it ✓"}
    assert seen["headers"]["Authorization"] == "token t1"
    assert seen["headers"]["If-None-Match"] == '"e0"'
    assert seen["headers"]["User-Agent"] == "railyard"
    assert seen["headers"]["Content-Type"] == "application/json"


async def test_a_304_and_a_compressed_answer_come_back_as_httpx_gives_them(server: str) -> None:
    async with _client(server) as client:
        same = await client.get("/same", headers={"If-None-Match": '"e1"'})
        zipped = await client.get("/gzip")
    assert same.status_code == 304 and same.content == b""
    assert zipped.json() == {"ok": True}


async def test_many_requests_share_the_session(server: str) -> None:
    async with _client(server) as client:
        answers = await asyncio.gather(*(client.get("/echo") for _ in range(20)))
    assert all(answer.status_code == 200 for answer in answers)


async def test_nothing_listening_is_a_connect_error_nothing_was_sent() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with _client(f"http://127.0.0.1:{port}") as client:
        with pytest.raises(httpx.ConnectError):
            await client.post("/echo", json={})


async def test_a_server_hanging_up_after_the_request_is_a_read_error_it_may_have_acted(server: str) -> None:
    async with _client(server) as client:
        with pytest.raises(httpx.TransportError) as raised:
            await client.post("/hang-up", json={"body": "a comment"})
    assert isinstance(raised.value, httpx.ReadError)
    assert not isinstance(raised.value, httpx.ConnectError | httpx.ConnectTimeout)


async def test_an_answer_slower_than_the_read_timeout_is_a_read_timeout(server: str) -> None:
    async with _client(server, timeout=0.3) as client:
        with pytest.raises(httpx.ReadTimeout):
            await client.get("/slow")


async def test_opened_at_start_it_connects_nowhere_and_the_first_request_uses_that_session() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    transport = AiohttpTransport()
    transport.open()  # nothing listens there: opening connects to nothing, so it cannot fail
    opened = transport._session
    assert opened is not None
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", transport=transport) as client:
        with pytest.raises(httpx.ConnectError):  # the connection is tried by the request only
            await client.get("/echo")
        assert transport._session is opened


async def test_closing_the_client_closes_the_session(server: str) -> None:
    transport = AiohttpTransport()
    async with httpx.AsyncClient(base_url=server, transport=transport) as client:
        await client.get("/echo")
    assert transport._session is None


async def test_an_answer_that_is_not_http_after_the_request_is_a_protocol_error_it_may_have_acted() -> None:
    """The request arrived whole, then the answer is garbage: an httpx transport error that says
    GitHub may have acted (a write must look ambiguous), never an aiohttp error httpx's callers
    do not know."""

    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 two hundred OK\r\n\r\n")
        await writer.drain()
        writer.close()

    listening = await asyncio.start_server(garbage, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    try:
        async with _client(f"http://127.0.0.1:{port}") as client:
            with pytest.raises(httpx.TransportError) as raised:
                await client.post("/comments", json={"body": "a comment"})
        assert not isinstance(raised.value, httpx.ConnectError | httpx.ConnectTimeout)
    finally:
        listening.close()
        await listening.wait_closed()


async def test_a_direct_get_sends_exactly_its_headers_and_answers_as_httpx_would(server: str) -> None:
    """The API's token checks skip httpx's client: the answer is still an httpx response, a 304
    keeps its ETag, and the request it names is the URL asked."""
    transport = AiohttpTransport()
    try:
        echoed = await transport.get(f"{server}/echo", {"Authorization": "Bearer t1", "Accept": "a/b"}, 5.0)
        same = await transport.get(f"{server}/same", {"If-None-Match": '"e1"'}, 5.0)
    finally:
        await transport.aclose()
    seen = echoed.json()
    assert echoed.status_code == 200 and seen["method"] == "GET" and seen["path"] == "/echo"
    assert seen["headers"]["Authorization"] == "Bearer t1" and seen["headers"]["Accept"] == "a/b"
    assert same.status_code == 304 and same.headers["etag"] == '"e1"'
    assert str(same.request.url) == f"{server}/same"


async def test_a_direct_get_fails_as_httpx_would(server: str) -> None:
    transport = AiohttpTransport()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    try:
        with pytest.raises(httpx.ConnectError):
            await transport.get(f"http://127.0.0.1:{port}/user", {}, 5.0)
        with pytest.raises(httpx.ReadTimeout):
            await transport.get(f"{server}/slow", {}, 0.3)
    finally:
        await transport.aclose()


@pytest.fixture
async def proxy() -> AsyncIterator[tuple[str, list[str]]]:
    """A plain HTTP proxy that answers itself, recording the absolute URLs it was asked for."""
    asked: list[str] = []

    async def forward(request: web.Request) -> web.Response:
        asked.append(str(request.url))
        return web.json_response({"via": "proxy"})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", forward)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}", asked
    await runner.cleanup()


async def test_the_environments_proxy_is_used_and_no_proxy_honoured(
    server: str, proxy: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """HTTP_PROXY carries requests to other hosts, through both paths; NO_PROXY's hosts are asked
    directly. Looked up once per origin, as httpx reads the environment once."""
    proxy_url, asked = proxy
    monkeypatch.setenv("HTTP_PROXY", proxy_url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    transport = AiohttpTransport()
    try:
        async with httpx.AsyncClient(transport=transport) as client:
            proxied = await client.get("http://api.github.invalid/user")
            direct = await client.get(f"{server}/echo")
        via_get = await transport.get("http://api.github.invalid/repos/acme/web", {}, 5.0)
    finally:
        await transport.aclose()
    assert proxied.json() == {"via": "proxy"} and via_get.json() == {"via": "proxy"}
    assert direct.json()["path"] == "/echo"
    assert asked == ["http://api.github.invalid/user", "http://api.github.invalid/repos/acme/web"]


async def test_without_trust_env_no_proxy_is_used(
    server: str, proxy: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy[0])
    monkeypatch.delenv("NO_PROXY", raising=False)
    async with httpx.AsyncClient(transport=AiohttpTransport(trust_env=False)) as client:
        answer = await client.get(f"{server}/echo")
    assert answer.json()["path"] == "/echo" and proxy[1] == []
