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
