"""JSON answers, and the guard that turns an unexpected error into one instead of a traceback."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import structlog
from aiohttp import web

log = structlog.get_logger(__name__)

RouteHandler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def answer(status: int, message: str, **extra: Any) -> web.Response:
    """`{"message": ..., **extra}` with `status`."""
    body = orjson.dumps({"message": message, **extra})
    return web.Response(status=status, body=body, content_type="application/json")


def guarded(handler: RouteHandler) -> RouteHandler:
    """`handler`, answering an unexpected error with a logged JSON 500, never a traceback.

    A decorator on each route rather than an application middleware: aiohttp runs handlers
    without its middleware chain when there is none, which the webhook path, taken thousands
    of times a second under load, notices.
    """

    @functools.wraps(handler)
    async def guard(request: web.Request) -> web.StreamResponse:
        try:
            return await handler(request)
        except web.HTTPException as error:
            if error.status == 413:
                return answer(413, "payload larger than 25 MB")
            raise
        except Exception:
            log.exception("unexpected error", path=request.path)
            return answer(500, "internal error; it has been logged")

    return guard
