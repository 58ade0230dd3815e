"""A stateless aiohttp webhook bot: the yardstick `bench/intake.py` measures railyard against.

It does what the least a webhook receiver can do: verify the HMAC-SHA256 signature with the same
secret (constant-time), parse the JSON, answer 202, and store nothing. On the same event loop
(uvloop) and the same aiohttp as railyard, so the ratio railyard/stateless shows what railyard's
durability (storing each delivery before acknowledging it) costs on whatever machine runs it.

    WEBHOOK_SECRET=... PORT=3000 python bench/stateless_bot.py
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aiohttp import web

from app.cli.processes import _event_loop_policy

SECRET = web.AppKey("secret", bytes)


async def receive(request: web.Request) -> web.Response:
    """Verify the signature, parse the body, acknowledge; 401 for a bad signature, 400 for bad JSON."""
    body = await request.read()
    expected = "sha256=" + hmac.new(request.app[SECRET], body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, request.headers.get("X-Hub-Signature-256", "")):
        return web.Response(status=401)
    try:
        json.loads(body)
    except ValueError:
        return web.Response(status=400)
    return web.Response(status=202)


async def healthz(_: web.Request) -> web.Response:
    """Always healthy: there is nothing behind it."""
    return web.Response(text="ok")


def create_bot(secret: str) -> web.Application:
    """The bot's application: POST /webhooks and GET /healthz."""
    app = web.Application()
    app[SECRET] = secret.encode()
    app.router.add_post("/webhooks", receive)
    app.router.add_get("/healthz", healthz)
    return app


if __name__ == "__main__":
    _event_loop_policy()
    bot = create_bot(os.environ["WEBHOOK_SECRET"])
    host, port = os.environ.get("HOST", "127.0.0.1"), int(os.environ.get("PORT", "3000"))
    web.run_app(bot, host=host, port=port, access_log=None, print=None)
