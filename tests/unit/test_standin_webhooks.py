"""The stand-in's own webhooks and issue pages: what `railyard demo` relies on to play GitHub."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from aiohttp import web

from app.store.intake import sign
from github_standin import StandinState, Webhooks, WebhookTarget, running_standin
from handlers.comments import CommentFacts
from handlers.routing import WebhookEvent

SECRET = "demo-secret"


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[str, list[tuple[dict[str, str], bytes]]]]:
    """A webhook URL on loopback that answers 202 and keeps what it received."""
    received: list[tuple[dict[str, str], bytes]] = []

    async def hook(request: web.Request) -> web.Response:
        received.append((dict(request.headers), await request.read()))
        return web.Response(status=202)

    app = web.Application()
    app.router.add_post("/webhooks", hook)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield f"http://127.0.0.1:{port}/webhooks", received
    await runner.cleanup()


def world() -> StandinState:
    state = StandinState()
    state.add_installation(7, "acme")
    state.add_repository("acme/web")
    state.add_issue("acme/web", 12, title="Resumable uploads", body="Make them resume")
    private = state.add_repository("acme/vault", private=True)
    state.add_issue(private.full_name, 1, body="Secret plans")
    return state


async def test_a_comment_posted_to_the_stand_in_reaches_the_app_as_a_signed_webhook(receiver: Any) -> None:
    """POST /_standin/comments keeps the comment and sends `issue_comment` signed as GitHub signs it,
    in the shape railyard's handler reads, and lists the delivery."""
    url, received = receiver
    state = world()
    state.webhook = WebhookTarget(url, SECRET)
    async with running_standin(state) as standin, httpx.AsyncClient() as client:
        body = {"repo": "acme/web", "number": 12, "body": "/claim", "login": "agent-ann"}
        answer = await client.post(f"{standin.url}/_standin/comments", json=body)
    assert answer.status_code == 201
    assert answer.json()["delivery"]["status_code"] == 202
    [(headers, sent)] = received
    assert headers["X-GitHub-Event"] == "issue_comment"
    assert headers["X-Hub-Signature-256"] == sign(sent, SECRET.encode())
    payload = json.loads(sent)
    facts = CommentFacts.read(
        WebhookEvent(headers["X-GitHub-Delivery"], "issue_comment", "created", 7, payload)
    )
    assert facts is not None
    assert (facts.repository, facts.number, facts.body) == ("acme/web", 12, "/claim")
    assert facts.author_id == state.user_id("agent-ann")
    assert [c.body for c in state.comments.values()] == ["/claim"]
    assert [d.guid for d in state.deliveries] == [headers["X-GitHub-Delivery"]]


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"repo": "acme/web", "number": 12, "body": "/claim", "login": "not a login"}, 400, "login"),
        ({"repo": "acme/web", "number": 12, "body": "  ", "login": "ann"}, 400, "body"),
        ({"repo": "acme/nope", "number": 12, "body": "/claim", "login": "ann"}, 404, "no repository"),
        ({"repo": "acme/web", "number": 99, "body": "/claim", "login": "ann"}, 404, "no issue"),
        ({"repo": "acme/web", "number": "12", "body": "/claim", "login": "ann"}, 404, "no issue"),
    ],
)
async def test_a_bad_comment_request_is_refused_with_nothing_written_or_sent(
    receiver: Any, body: dict[str, Any], status: int, message: str
) -> None:
    """A malformed login, an empty body, an unknown repository or issue: a 4xx saying which, and
    no comment kept, no webhook sent."""
    url, received = receiver
    state = world()
    state.webhook = WebhookTarget(url, SECRET)
    async with running_standin(state) as standin, httpx.AsyncClient() as client:
        answer = await client.post(f"{standin.url}/_standin/comments", json=body)
    assert answer.status_code == status
    assert message in answer.json()["message"]
    assert state.comments == {} and received == [] and state.deliveries == []


async def test_without_a_webhook_url_the_stand_in_refuses_to_take_a_comment() -> None:
    """No webhook URL yet: 409, and the comment is not kept (GitHub would have sent it)."""
    state = world()
    async with running_standin(state) as standin, httpx.AsyncClient() as client:
        body = {"repo": "acme/web", "number": 12, "body": "/claim", "login": "ann"}
        answer = await client.post(f"{standin.url}/_standin/comments", json=body)
    assert answer.status_code == 409
    assert state.comments == {}


async def test_a_pull_request_payload_carries_the_pull_as_it_is_now(receiver: Any) -> None:
    """`Webhooks.pull_request` for a merged PR: merged, its merge commit, and updated now."""
    url, received = receiver
    state = world()
    state.webhook = WebhookTarget(url, SECRET)
    pull = state.add_pull("acme/web", 21, body="Fixes #12", head_ref="agent/12", merged=True, state="closed")
    pull.merge_commit_sha = "d" * 40
    async with running_standin(state) as standin:
        hooks = Webhooks(state, standin.url)
        payload = hooks.pull_request("closed", state.repositories["acme/web"], pull, "max")
        await hooks.send("pull_request", payload)
    assert json.loads(received[0][1]) == payload
    assert payload["action"] == "closed" and payload["number"] == 21
    assert payload["pull_request"]["merged"] is True
    assert payload["pull_request"]["merge_commit_sha"] == "d" * 40
    assert payload["pull_request"]["merged_at"] == payload["pull_request"]["updated_at"]
    assert payload["installation"]["id"] == 7


async def test_the_issue_page_renders_comments_and_hides_html_comments() -> None:
    """The web host's issue page: Markdown rendered, HTML comments hidden, raw HTML escaped, and a
    private repository's issue not shown."""
    state = world()
    state.add_comment("acme/web", 12, "**Work: open**\n\n<!-- railyard:status-json {} -->\n<b>x</b>")
    async with running_standin(state) as standin, httpx.AsyncClient() as client:
        page = await client.get(f"{standin.url}/acme/web/issues/12")
        private = await client.get(f"{standin.url}/acme/vault/issues/1")
        missing = await client.get(f"{standin.url}/acme/web/issues/404")
    assert page.status_code == 200
    assert "<strong>Work: open</strong>" in page.text
    assert "railyard:status-json" not in page.text
    assert "&lt;b&gt;x&lt;/b&gt;" in page.text
    assert private.status_code == 404 and "Secret plans" not in private.text
    assert missing.status_code == 404
