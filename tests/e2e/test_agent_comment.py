"""`railyard agent` by comment, end to end: the command runs as an Actions step would, posting
with the agent's own token to the GitHub stand-in; the comment reaches the real server as a
signed `issue_comment` webhook (forwarded here, as GitHub would send it); the command reads
the comments until the status comment or railyard's reply shows the outcome."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from app.cli import main
from app.store.database import Database
from github_standin import running_standin
from support.world import REPO, World, comment_payload, standin_state
from tests.fakes import app_settings, running_server

SUMMARY = "Uploads resume after a dropped connection.\n/accept is not a command here."


@dataclass
class AgentWorld:
    """The e2e world, the stand-in's address, and where the step's summary and outputs go."""

    world: World
    github_api: str
    tmp: Path

    sent: set[int] = field(default_factory=set)

    async def run(
        self, login: str, *argv: str, app_id: str | None = "1", forward: bool = True, timeout: str = "60"
    ) -> tuple[int, str, str]:
        """Run `railyard agent ...` with `login`'s own token (trusting railyard's app, id 1, unless
        told otherwise), forwarding their comments as webhooks unless `forward` is False."""
        token = self.world.github.issue_user_token(login)
        out, err = io.StringIO(), io.StringIO()
        common = ["--repo", REPO, "--issue", "12", "--token", token, "--github-api-url", self.github_api]
        common += ["--app-id", app_id] if app_id is not None else []
        command = ["agent", argv[0], *common, "--poll-interval", "0.05", "--timeout", timeout, *argv[1:]]
        forwarding = asyncio.create_task(self._forward(login) if forward else asyncio.sleep(3600))
        try:
            status = await asyncio.to_thread(main, command, None, out, err)
        finally:
            forwarding.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await forwarding
        return status, out.getvalue(), err.getvalue()

    async def forward_once(self, login: str) -> int:
        """Send every comment `login` posted and railyard has not seen; how many were sent."""
        count = 0
        for comment in list(self.world.github.comments.values()):
            if comment.user == login and comment.app_id is None and comment.id not in self.sent:
                self.sent.add(comment.id)
                account = self.world.github.user_id(login)
                payload = comment_payload(login, comment.body, 12, id=comment.id, user_id=account)
                response = await self.world.server.deliver("issue_comment", json.dumps(payload).encode())
                assert response.status == 202
                count += 1
        return count

    async def _forward(self, login: str) -> None:
        """GitHub's part: each comment `login` posts is sent to railyard as a signed webhook."""
        while True:
            await self.forward_once(login)
            await asyncio.sleep(0.02)


@pytest.fixture
async def agents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[AgentWorld]:
    """A configured server talking to the stand-in, and a step environment without Actions' run id."""
    for name in (
        "GITHUB_RUN_ID",
        "GITHUB_SHA",
        "GITHUB_TOKEN",
        "RAILYARD_TOKEN",
        "RAILYARD_URL",
        "RAILYARD_APP_ID",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "output"))
    state = standin_state()
    async with running_standin(state) as standin:
        url = f"sqlite:///{tmp_path}/railyard.db"
        settings = app_settings(url, GITHUB_API_URL=standin.url, APP_ID="1")
        async with running_server(settings) as server:
            yield AgentWorld(World(server, state, Database(url)), standin.url, tmp_path)


async def test_an_agent_claims_and_delivers_by_comment_and_sees_each_outcome(agents: AgentWorld) -> None:
    """`agent claim` then `agent deliver` by comment exit 0 once the status comment shows each change."""
    world = agents.world
    await world.say("rachel", "/publish")
    status, out, err = await agents.run("cody", "claim", "--check-in", "60")
    assert (status, err) == (0, ""), out
    assert world.ticket().work.value == "claimed" and world.ticket().claimant == "cody"
    assert (
        f"railyard claim {REPO}#12: applied: {REPO}#12 claimed at revision {world.ticket().revision}" in out
    )
    status, out, err = await agents.run("cody", "deliver", "--branch", "agent/12-fix", "--summary", SUMMARY)
    assert (status, err) == (0, ""), out
    ticket = world.ticket()
    assert ticket.work.value == "delivered" and ticket.last_delivery.branch == "agent/12-fix"
    assert "\\/accept is not a command here." in ticket.last_delivery.summary
    summary = (agents.tmp / "summary.md").read_text()
    assert f"### railyard deliver {REPO}#12: applied" in summary and "via: issue comment" in summary
    output = (agents.tmp / "output").read_text().splitlines()
    assert f"revision={ticket.revision}" in output and "applied=true" in output


async def test_a_refused_claim_by_comment_fails_with_railyards_reason(agents: AgentWorld) -> None:
    """A claim by someone without `runner` exits 1 with railyard's refusal on stderr and in the summary."""
    world = agents.world
    await world.say("rachel", "/publish")
    status, out, err = await agents.run("rita", "claim", "--json")
    assert status == 1
    assert world.ticket().work.value == "open"
    assert "railyard: refused: Refused:" in err and "runner" in err
    answer = json.loads(out)
    assert answer["code"] == "not_allowed" and answer["applied"] is False and answer["exit"] == 1
    assert "- code: `not_allowed`" in (agents.tmp / "summary.md").read_text()
    assert "applied=false" in (agents.tmp / "output").read_text().splitlines()


async def test_a_claim_by_comment_against_a_stale_revision_is_refused_as_stale(agents: AgentWorld) -> None:
    """`--rev` with an old revision is refused as stale; the answer line names the current revision."""
    world = agents.world
    await world.say("rachel", "/publish")
    now = world.ticket().revision
    status, out, _ = await agents.run("cody", "claim", "--rev", str(now - 1), "--json")
    assert status == 1 and world.ticket().work.value == "open"
    answer = json.loads(out)
    assert answer["code"] == "stale_revision" and answer["revision"] == now
