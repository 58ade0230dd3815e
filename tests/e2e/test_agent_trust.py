"""`railyard agent` by comment cannot be fooled or jammed by what others post (SPEC: "Answers
that cannot be forged or jammed"), end to end: the real server, the GitHub stand-in, the agent
as an Actions step runs it, and an outsider or another app posting while the agent waits.

The agent's own comment is held back (its webhook late) while the others post, so what the
agent reads first is theirs."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from app.contracts.effect_types import status_key
from app.store.effects import marker
from app.views.status_json import answer_line, status_line
from github_standin.state import CheckRun
from support.world import FIX, REPO
from tests.e2e import test_agent_comment
from tests.e2e.test_agent_comment import AgentWorld

agents = test_agent_comment.agents  # the same fixture: the server, the stand-in, the step's files
GITHUB_ACTIONS_APP = 15368  # the app id of GitHub Actions, whose check-runs are named after jobs
COMMAND_LINE = re.compile(r"^[ \t]*(::|##\[)", re.MULTILINE)


async def _posted_by(agents: AgentWorld, login: str) -> int:
    """Wait until `login`'s command comment is on the issue; its id."""
    for _ in range(400):
        for comment in agents.world.github.comments.values():
            if comment.user == login and comment.app_id is None and comment.body.startswith("/"):
                return comment.id
        await asyncio.sleep(0.02)
    raise TimeoutError(f"{login} posted nothing")


def _forged_status(claimant_id: int, work: str, revision: int) -> str:
    status = {"ticket": f"{REPO}#12", "work": work, "revision": revision, "attempt": 1}
    return json.dumps({**status, "claimant_id": claimant_id, "delivery": None})


async def test_a_forged_status_line_quoted_in_railyards_reply_is_not_the_claims_outcome(
    agents: AgentWorld,
) -> None:
    """An outsider's refused `/claim <!-- railyard:status-json {claimed by cody, revision
    999999} -->` answers first: railyard's reply does not carry the line, and the agent, whose
    own claim never reached railyard, does not report it applied."""
    world = agents.world
    await world.say("rachel", "/publish")
    cody = world.github.user_id("cody")
    running = asyncio.create_task(agents.run("cody", "claim", forward=False, timeout="3"))
    await _posted_by(agents, "cody")
    forged = f"/claim <!-- railyard:status-json {_forged_status(cody, 'claimed', 999999)} -->"
    await world.say("rita", forged)
    status, out, _ = await running
    assert status == 3 and "999999" not in out
    reply = next(c.body for c in world.github.comments.values() if c.app_id and "rita" in c.body)
    assert "Refused" in reply and "<!--" not in reply.split("\n\n<!-- railyard:answer ")[0]
    assert world.ticket().work.value == "open"


async def test_a_forged_status_line_cannot_jam_a_claim_that_applies(agents: AgentWorld) -> None:
    """An outsider's refused `/claim` quoting a status line that says `open` is posted while the
    agent waits; the agent's claim then applies and the agent says so (exit 0)."""
    world = agents.world
    await world.say("rachel", "/publish")
    running = asyncio.create_task(agents.run("cody", "claim", forward=False, timeout="20"))
    await _posted_by(agents, "cody")
    await world.say("rita", f"/claim <!-- railyard:status-json {_forged_status(1, 'open', 1)} -->")
    assert await agents.forward_once("cody") == 1
    await world.settle()
    status, out, err = await running
    assert (status, err) == (0, ""), out
    assert world.ticket().work.value == "claimed" and world.ticket().claimant == "cody"


async def test_another_apps_comments_are_neither_the_state_nor_the_answer(agents: AgentWorld) -> None:
    """Another installed app posts a perfect status comment (claimed by cody) and a perfect
    refusal naming the agent's comment, words holding `::warning::`: the agent trusts neither,
    and nothing it writes starts a workflow command."""
    world = agents.world
    await world.say("rachel", "/publish")
    cody = world.github.user_id("cody")
    running = asyncio.create_task(agents.run("cody", "claim", forward=False, timeout="3"))
    posted = await _posted_by(agents, "cody")
    status_body = json.loads(_forged_status(cody, "claimed", 999999))
    end = marker(status_key(REPO, 12))
    fake_status = world.github.add_comment(
        REPO, 12, f"x\n\n{status_line(status_body)}\n\n{end}", "helper[bot]", "Bot"
    )
    reply = (
        f"@cody: `/claim`\n\nRefused: no.\n::warning::pwned\n\n{answer_line(str(posted), 'not_allowed', 1)}"
    )
    fake_reply = world.github.add_comment(REPO, 12, f"{reply}\n\n{marker('reply')}", "helper[bot]", "Bot")
    fake_status.app_id = fake_reply.app_id = 2
    status, out, err = await running
    assert status == 3 and "999999" not in out and "pwned" not in err
    assert not COMMAND_LINE.search(out + err + (agents.tmp / "summary.md").read_text())
    assert world.ticket().work.value == "open"


async def test_a_workflow_job_named_railyard_cannot_lend_github_actions_its_trust(
    agents: AgentWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No app id by comment: even with GitHub Actions' own `railyard` check-run on the commit and
    a `github-actions[bot]` comment showing the claim, the step stops (exit 2) saying where the
    id is, posts nothing, and reports nothing applied; with railyard's id the claim applies."""
    world = agents.world
    await world.say("rachel", "/publish")
    monkeypatch.setenv("GITHUB_SHA", FIX)
    job = CheckRun(world.github.next_id(), REPO, "railyard", FIX, status="completed", conclusion="success")
    job.app_id = GITHUB_ACTIONS_APP
    world.github.check_runs[job.id] = job
    claimed = _forged_status(world.github.user_id("cody"), "claimed", 99)
    end = marker(status_key(REPO, 12))
    lookalike = world.github.add_comment(
        REPO,
        12,
        f"looks like railyard\n\n{status_line(json.loads(claimed))}\n\n{end}",
        "github-actions[bot]",
        "Bot",
    )
    lookalike.app_id = GITHUB_ACTIONS_APP
    before = len(world.github.comments)
    status, out, err = await agents.run("cody", "claim", app_id=None)
    assert status == 2 and "applied" not in out
    assert "--app-id" in err and "settings page" in err and len(world.github.comments) == before
    assert world.ticket().work.value == "open"
    status, out, err = await agents.run("cody", "claim", app_id="1")
    assert (status, err) == (0, ""), out
    assert world.ticket().claimant == "cody"
