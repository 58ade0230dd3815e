"""A stateless gidgethub bot: the yardstick `bench/intake.py` measures railyard against.

The stateless gidgethub bot issue 28 names: an aiohttp server on uvloop (the event loop and the
aiohttp railyard runs on) whose POST /webhooks reads the body and hands it to gidgethub's
`sansio.Event.from_http`, which checks the signature (HMAC-SHA256, constant-time, the same
secret), the content type and the delivery headers and parses the JSON; it answers 202 and
stores nothing. What gidgethub raises becomes the answer: `ValidationFailure` (a bad or missing
signature) 401, `BadRequest` its own status (415 for a content type other than JSON or a body
that is not JSON), and a missing X-GitHub-Event or X-GitHub-Delivery header 400. So the ratio
railyard/gidgethub bot shows what railyard's durability (storing each delivery before
acknowledging it) costs on whatever machine runs it.

    WEBHOOK_SECRET=... PORT=3000 python bench/stateless_bot.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aiohttp import web
from gidgethub import BadRequest, ValidationFailure
from gidgethub.sansio import Event

from app.cli.processes import _event_loop_policy

SECRET = web.AppKey("secret", str)


async def receive(request: web.Request) -> web.Response:
    """Verify, validate and parse with gidgethub, then acknowledge; nothing is kept."""
    body = await request.read()
    try:
        Event.from_http(request.headers, body, secret=request.app[SECRET])
    except ValidationFailure:
        return web.Response(status=401)
    except BadRequest as error:
        return web.Response(status=int(error.status_code))
    except KeyError:  # gidgethub reads X-GitHub-Event and X-GitHub-Delivery unguarded
        return web.Response(status=400)
    return web.Response(status=202)


async def healthz(_: web.Request) -> web.Response:
    """Always healthy: there is nothing behind it."""
    return web.Response(text="ok")


def create_bot(secret: str) -> web.Application:
    """The bot's application: POST /webhooks and GET /healthz."""
    app = web.Application()
    app[SECRET] = secret
    app.router.add_post("/webhooks", receive)
    app.router.add_get("/healthz", healthz)
    return app


if __name__ == "__main__":
    _event_loop_policy()
    bot = create_bot(os.environ["WEBHOOK_SECRET"])
    host, port = os.environ.get("HOST", "127.0.0.1"), int(os.environ.get("PORT", "3000"))
    web.run_app(bot, host=host, port=port, access_log=None, print=None)
