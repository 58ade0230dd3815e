"""bench/stateless_bot.py, the gidgethub bot bench/intake.py measures railyard against: it must
acknowledge exactly the deliveries GitHub would have signed, or its figures mean nothing.

In process (aiohttp's test server on a loopback port), no subprocess.
"""

from __future__ import annotations

import json

from aiohttp.test_utils import TestClient, TestServer

from app.store.intake import sign
from bench.stateless_bot import create_bot

SECRET = "it's a secret to everybody"
BODY = json.dumps({"action": "created", "comment": {"id": 1, "body": "hello"}}).encode()


def headers(body: bytes = BODY, secret: str = SECRET, **overrides: str) -> dict[str, str]:
    """A delivery's headers as GitHub sends them; an override of "" leaves that header out."""
    base = {
        "Content-Type": "application/json",
        "X-GitHub-Event": "issue_comment",
        "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
        "X-Hub-Signature-256": sign(body, secret.encode()),
    }
    base.update({key.replace("_", "-"): value for key, value in overrides.items()})
    return {key: value for key, value in base.items() if value}


async def post(body: bytes, sent: dict[str, str]) -> int:
    """POST /webhooks to a fresh bot; the status it answers."""
    async with TestClient(TestServer(create_bot(SECRET))) as client:
        response = await client.post("/webhooks", data=body, headers=sent)
        await response.read()
        return response.status


async def test_a_signed_json_delivery_is_acknowledged_with_202() -> None:
    """A JSON delivery signed with the bot's secret is acknowledged, as railyard acknowledges it."""
    assert await post(BODY, headers()) == 202


async def test_a_delivery_signed_with_another_secret_or_unsigned_gets_401() -> None:
    """gidgethub's ValidationFailure (wrong secret, no signature, a body changed after signing) is 401."""
    assert await post(BODY, headers(secret="another secret")) == 401
    assert await post(BODY, headers(X_Hub_Signature_256="")) == 401
    assert await post(BODY + b" ", headers()) == 401  # the body changed after signing


async def test_a_delivery_without_its_event_or_delivery_header_gets_400() -> None:
    """A delivery missing X-GitHub-Event or X-GitHub-Delivery is 400, not an unhandled error."""
    assert await post(BODY, headers(X_GitHub_Event="")) == 400
    assert await post(BODY, headers(X_GitHub_Delivery="")) == 400


async def test_a_signed_body_that_is_not_json_gets_gidgethubs_415() -> None:
    """gidgethub's BadRequest for a body or content type that is not JSON answers its own status, 415."""
    assert await post(b"{not json", headers(b"{not json")) == 415
    assert await post(BODY, headers(Content_Type="text/plain")) == 415


async def test_healthz_answers_ok() -> None:
    """GET /healthz answers 200 ok, which bench's ServerProcess waits for."""
    async with TestClient(TestServer(create_bot(SECRET))) as client:
        response = await client.get("/healthz")
        assert (response.status, await response.text()) == (200, "ok")
