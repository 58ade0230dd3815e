"""`railyard agent` through the HTTP API, end to end: the command runs as an Actions step would,
with the agent's own GitHub token, against the real server's `/api/v1` (GitHub the stand-in)."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.cli import main
from app.store.database import Database
from app.store.tickets import TicketService
from github_standin import Fault, running_standin
from policies.model import TicketKey
from support.world import CONFIG, REPO, World, standin_state
from tests.fakes import app_settings, running_server


@dataclass
class ApiAgents:
    """The e2e world, and where the step's summary and outputs go."""

    world: World
    tmp: Path

    async def run(self, login: str, *argv: str) -> tuple[int, str, str]:
        """Run `railyard agent ...` against the server's API with `login`'s own token."""
        token = self.world.github.issue_user_token(login)
        out, err = io.StringIO(), io.StringIO()
        common = ["--repo", REPO, "--issue", "12", "--token", token, "--url", self.world.server.url]
        command = ["agent", argv[0], *common, "--timeout", "60", *argv[1:]]
        status = await asyncio.to_thread(main, command, None, out, err)
        return status, out.getvalue(), err.getvalue()


@pytest.fixture
async def agents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ApiAgents]:
    """A configured server talking to the stand-in, and a step environment with a run id."""
    for name in ("GITHUB_SHA", "GITHUB_TOKEN", "RAILYARD_TOKEN", "RAILYARD_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_RUN_ID", "4242")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "output"))
    state = standin_state()
    async with running_standin(state) as standin:
        url = f"sqlite:///{tmp_path}/railyard.db"
        settings = app_settings(url, GITHUB_API_URL=standin.url, APP_ID="1")
        async with running_server(settings) as server:
            yield ApiAgents(World(server, state, Database(url)), tmp_path)


def claims(world: World) -> int:
    history = TicketService(world.database).history(TicketKey(REPO, 12))
    return sum(1 for recorded in history if recorded.event.type.value == "claimed")


async def test_an_agent_claims_and_delivers_through_the_api(agents: ApiAgents) -> None:
    """`agent claim` and `agent deliver --url` apply through the API; the events say via api."""
    world = agents.world
    await world.say("rachel", "/publish")
    status, out, err = await agents.run("cody", "claim")
    assert (status, err) == (0, ""), out
    assert world.ticket().work.value == "claimed" and world.ticket().claimant == "cody"
    status, out, err = await agents.run("cody", "deliver", "--branch", "agent/12-fix", "--summary", "Done.")
    assert (status, err) == (0, ""), out
    ticket = world.ticket()
    assert ticket.work.value == "delivered" and ticket.last_delivery.branch == "agent/12-fix"
    history = TicketService(world.database).history(TicketKey(REPO, 12))
    [delivered] = [r.event for r in history if r.event.type.value == "delivered"]
    assert delivered.data["via"] == "api" and delivered.operation_id.startswith("api:")
    assert "applied=true" in (agents.tmp / "output").read_text().splitlines()


async def test_the_step_sent_again_in_the_same_run_attempt_replays_and_claims_once(agents: ApiAgents) -> None:
    """The default key comes from the run and its attempt: the step sent again replays the answer."""
    world = agents.world
    await world.say("rachel", "/publish")
    assert (await agents.run("cody", "claim"))[0] == 0
    status, out, err = await agents.run("cody", "claim", "--json")
    assert (status, err) == (0, ""), out
    assert claims(world) == 1


async def test_a_refusal_through_the_api_fails_the_step_with_its_reason(agents: ApiAgents) -> None:
    """Someone without the runner role: exit 1, railyard's reason on stderr, nothing changed."""
    world = agents.world
    await world.say("rachel", "/publish")
    status, _, err = await agents.run("rita", "claim")
    assert status == 1 and "runner" in err and world.ticket().work.value == "open"


async def test_github_down_for_a_moment_is_retried_with_the_same_key(agents: ApiAgents) -> None:
    """Two 502s on the token check: the agent retries (same key) and the claim applies once."""
    world = agents.world
    await world.say("rachel", "/publish")
    world.github.inject("GET", r"^/user$", Fault(status=502), Fault(status=502))
    status, out, err = await agents.run("cody", "claim", "--json")
    assert (status, err) == (0, ""), out
    assert json.loads(out)["applied"] is True and claims(world) == 1


async def _delivered_then_sent_back(agents: ApiAgents, *key: str) -> None:
    world = agents.world
    await world.say("rachel", "/publish")
    assert (await agents.run("cody", "claim"))[0] == 0
    status, out, _ = await agents.run(
        "cody", "deliver", "--branch", "agent/12-fix", "--summary", "One.", *key
    )
    assert status == 0, out
    await asyncio.sleep(1.1)  # a comment's time is to the second: the review comes after the delivery
    await world.say("rita", "/send-back The upload still restarts from zero.")
    assert world.ticket().work.value == "claimed" and world.ticket().attempt == 2


async def test_a_replayed_delivery_of_an_earlier_attempt_is_not_reported_applied(agents: ApiAgents) -> None:
    """The first delivery's key sent again after a send-back: railyard answers 409, naming the
    earlier attempt and the ticket's current status; the step fails, nothing changes."""
    await _delivered_then_sent_back(agents, "--idempotency-key", "deliver-12")
    status, out, err = await agents.run(
        "cody", "deliver", "--branch", "agent/12-fix", "--summary", "One.", "--idempotency-key", "deliver-12"
    )
    assert status == 1 and "applied" not in out.split(":")[1], out
    assert "earlier_attempt" in out and "attempt 1" in err and "now at attempt 2 (claimed" in err
    assert agents.world.ticket().work.value == "claimed"
    answer = json.loads(
        (await agents.run("cody", "deliver", "--branch", "agent/12-fix", "--summary", "One.",
                          "--idempotency-key", "deliver-12", "--json"))[1]
    )  # fmt: skip
    assert answer["status"]["attempt"] == 2 and answer["earlier_answer"]["applied"] is True


async def test_a_workflow_rerun_after_a_send_back_delivers_again(
    agents: ApiAgents, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Re-running the workflow after a send-back: its claim step replays the run's claim, which
    railyard names an earlier attempt's while the agent still holds the ticket (exit 0, attempt
    2), and its delivery, keyed by the run attempt, is a new delivery (attempt 2 delivered)."""
    monkeypatch.setenv("GITHUB_RUN_ATTEMPT", "1")
    await _delivered_then_sent_back(agents)
    monkeypatch.setenv("GITHUB_RUN_ATTEMPT", "2")
    status, out, err = await agents.run("cody", "claim")
    assert (status, err) == (0, ""), out
    assert "still claimed, now at attempt 2" in out and "attempt=2" in (agents.tmp / "output").read_text()
    fixed = agents.world.github.repository(REPO)
    assert fixed is not None
    fixed.branches["agent/12-fix"] = "a" * 40  # the re-run pushed a fix
    status, out, err = await agents.run("cody", "deliver", "--branch", "agent/12-fix", "--summary", "Two.")
    assert (status, err) == (0, ""), out
    assert "replayed" not in out
    ticket = agents.world.ticket()
    assert ticket.work.value == "delivered" and ticket.last_delivery.attempt == 2


async def test_a_bot_no_role_names_is_refused_exit_1(agents: ApiAgents) -> None:
    """SPEC: 403 role or relation refused; docs/agents.md: exit 1 refused. The API's 403 for a bot
    no role names is a final refusal, never "outcome unknown" (exit 3: retry with the same key)."""
    world = agents.world
    await world.say("rachel", "/publish")
    status, out, err = await agents.run("other-bot[bot]", "claim")
    assert "403" in out, out
    assert status == 1, (status, out, err)


async def test_over_budget_429_is_a_refusal_exit_1(agents: ApiAgents) -> None:
    """SPEC: 429 budget; docs/agents.md: `429 over_budget` is an answer (wait, then a new key),
    exit 1 refused with its message on stderr; exit 3 means no answer before the timeout."""
    world = agents.world
    world.github.repositories[REPO].files[".github/railyard.yml"] = (
        CONFIG + "limits:\n  commands_per_hour: 1\n"
    )
    await world.say("rachel", "/publish")
    assert (await agents.run("cody", "claim"))[0] == 0
    status, out, err = await agents.run("cody", "deliver", "--branch", "agent/12-fix", "--summary", "Done.")
    assert "429" in out, out
    assert status == 1, (status, out, err)


async def test_a_rerun_claim_after_the_ticket_was_reopened_is_not_reported_held(
    agents: ApiAgents, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/agents.md: a re-run's claim is reported as held (exit 0) *while the agent still holds
    the ticket*. The run claimed, a reviewer reopened the ticket (open, no claimant, attempt still
    1): the re-run's claim step must not tell the workflow it holds the claim."""
    world = agents.world
    monkeypatch.setenv("GITHUB_RUN_ATTEMPT", "1")
    await world.say("rachel", "/publish")
    assert (await agents.run("cody", "claim"))[0] == 0
    await world.say("rita", "/reopen Wrong approach: talk to the storage team first.")
    assert world.ticket().work.value == "open" and world.ticket().claimant is None
    monkeypatch.setenv("GITHUB_RUN_ATTEMPT", "2")
    status, out, _ = await agents.run("cody", "claim")
    held = world.ticket().work.value == "claimed" and world.ticket().claimant == "cody"
    assert status != 0 or held, out  # today: exit 0, "applied (replayed): ... claimed at revision 3"


async def delivered_again_after_a_fix(agents: ApiAgents, summary: str) -> None:
    """cody delivers agent/12-fix ("One."), is sent back, pushes a fix in the same job and
    delivers the branch again saying `summary`: the new delivery applies to attempt 2."""
    await _delivered_then_sent_back(agents)
    fixed = agents.world.github.repository(REPO)
    assert fixed is not None
    fixed.branches["agent/12-fix"] = "a" * 40  # the agent pushed a fix, in the same job
    status, out, err = await agents.run("cody", "deliver", "--branch", "agent/12-fix", "--summary", summary)
    assert status == 0, (out, err)
    assert agents.world.ticket().last_delivery.attempt == 2


async def test_a_second_delivery_of_a_new_commit_in_the_same_job_is_a_new_command(agents: ApiAgents) -> None:
    """docs/agents.md: the default key is made of the run id, the action, the issue and, for a
    delivery, the commit and GITHUB_RUN_ATTEMPT (agent_core.default_key: "of a new commit is a new
    command"). An agent that delivers its branch, is sent back, pushes a fix and delivers the
    branch again within the same job gets its new delivery applied."""
    await delivered_again_after_a_fix(agents, "Two.")


@pytest.mark.xfail(
    strict=True,
    reason="known limit (docs/agents.md): a branch delivery's default key holds what it says, not the "
    "branch's head; the same words after a new push in the same job are the same key",
)
async def test_a_second_delivery_of_a_new_commit_in_the_same_job_with_the_same_words_is_new(
    agents: ApiAgents,
) -> None:
    """docs/agents.md: "a re-run's delivery, or a new delivery in the same job, is a new command".
    An agent delivers its branch with a fixed summary (`--summary "One."`, as a workflow's
    template would), is sent back, pushes a fix and delivers the branch again in the same job
    with the same words. The default key digests branch, summary, artifacts and evidence, never
    the commit the branch now holds: the new delivery reuses the first one's key and is answered
    409 `earlier_attempt` (exit 1); the fix is never delivered without a hand-made key."""
    await delivered_again_after_a_fix(agents, "One.")


async def test_a_second_artifact_delivery_in_the_same_job_is_a_new_command(
    agents: ApiAgents, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/agents.md: "a new delivery in the same job is a new command". Without `--branch` the
    delivery names the workflow's commit (`GITHUB_SHA`, set in every Actions job), so the
    default key holds that commit and nothing of what the delivery says (`said` is used only
    when no commit is named). An agent delivers a report artifact, is sent back, and delivers a
    new report in the same job: the same key with another body is answered 422
    `idempotency_key_reused` (exit 2, "not sent"), as the branch delivery was before 15c1478."""
    world = agents.world
    monkeypatch.setenv("GITHUB_SHA", "1" * 40)  # main's head, the commit the workflow runs at
    await world.say("rachel", "/publish")
    assert (await agents.run("cody", "claim"))[0] == 0
    first = ("--artifact", "https://reports.example/12/1", "--summary", "The first report.")
    status, out, _ = await agents.run("cody", "deliver", *first)
    assert status == 0, out
    await asyncio.sleep(1.1)  # a comment's time is to the second: the review comes after the delivery
    await world.say("rita", "/send-back The report misses the upload numbers.")
    assert world.ticket().work.value == "claimed" and world.ticket().attempt == 2
    second = ("--artifact", "https://reports.example/12/2", "--summary", "The report, with the numbers.")
    status, out, err = await agents.run("cody", "deliver", *second)
    assert status == 0, (out, err)  # today: exit 2, "not sent (idempotency_key_reused, HTTP 422)"
    assert world.ticket().last_delivery.attempt == 2
