"""The guard on every route: an unexpected error becomes a logged JSON 500, never a traceback."""

from __future__ import annotations

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from app.web.responses import guarded


async def test_an_unexpected_error_is_a_json_500_without_the_traceback() -> None:
    async def broken(request: web.Request) -> web.StreamResponse:
        raise KeyError("secret-looking internals")

    response = await guarded(broken)(make_mocked_request("GET", "/healthz"))

    assert isinstance(response, web.Response) and response.status == 500
    assert response.body is not None
    body = bytes(response.body)  # type: ignore[arg-type]
    assert orjson.loads(body) == {"message": "internal error; it has been logged"}
    assert b"secret-looking" not in body and b"Traceback" not in body


async def test_too_large_is_a_json_413_and_other_http_answers_pass_through() -> None:
    async def too_large(request: web.Request) -> web.StreamResponse:
        raise web.HTTPRequestEntityTooLarge(max_size=1, actual_size=2)

    async def missing(request: web.Request) -> web.StreamResponse:
        raise web.HTTPNotFound()

    response = await guarded(too_large)(make_mocked_request("POST", "/webhooks"))
    assert response.status == 413
    with pytest.raises(web.HTTPNotFound):
        await guarded(missing)(make_mocked_request("GET", "/nowhere"))


async def test_a_normal_answer_is_untouched() -> None:
    async def fine(request: web.Request) -> web.StreamResponse:
        return web.Response(status=202, text="stored")

    response = await guarded(fine)(make_mocked_request("POST", "/webhooks"))
    assert response.status == 202
