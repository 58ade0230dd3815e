"""Loops that cannot run for ever and what deliveries cost, through the real server: evidence
reported on `/deliver`, A, B, A refused, the attempt limit, and a runner's monthly budget."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from app.store.database import Database
from app.views.status_json import parse_status_line
from github_standin import running_standin
from support.world import CONFIG, REPO, World, standin_state
from tests.fakes import app_settings, running_server

A, B, C = "a" * 40, "b" * 40, "c" * 40


async def _world(tmp_path: Path, config: str) -> AsyncIterator[World]:
    state = standin_state()
    repository = state.repositories[REPO]
    repository.files[".github/railyard.yml"] = config
    repository.commits.update({A, B, C, *(f"{n:040x}" for n in range(1, 12))})
    state.add_issue(REPO, 14, body="Cache the thumbnails")
    async with running_standin(state) as standin:
        url = f"sqlite:///{tmp_path}/railyard.db"
        settings = app_settings(url, GITHUB_API_URL=standin.url, APP_ID="1")
        async with running_server(settings) as server:
            yield World(server, state, Database(url))


@pytest.fixture
async def plain(tmp_path: Path) -> AsyncIterator[World]:
    async for world in _world(tmp_path, CONFIG):
        yield world


@pytest.fixture
async def budgeted(tmp_path: Path) -> AsyncIterator[World]:
    async for world in _world(
        tmp_path, CONFIG + "limits:\n  cost_per_runner_month: 1\n  cost_per_ticket: 2\n"
    ):
        yield world


@pytest.fixture
async def two_attempts(tmp_path: Path) -> AsyncIterator[World]:
    async for world in _world(tmp_path, CONFIG + "limits:\n  attempts_per_ticket: 2\n"):
        yield world


def status(world: World, number: int = 12) -> dict[str, Any]:
    [body] = world.status_comments(number)
    found = parse_status_line(body)
    assert found is not None
    return found


async def test_delivery_evidence_shows_in_the_status_object_and_the_comment(plain: World) -> None:
    """`/deliver ... model=m1 tokens_in=1200 tokens_out=300 cost=0.42`: on the delivery, summed on
    the ticket, and shown as the runner's report."""
    await plain.say("rachel", "/publish")
    await plain.say("cody", "/claim")
    await plain.say("cody", f"/deliver commit={A} model=m1 tokens_in=1200 tokens_out=300 cost=0.42 Done.")
    found = status(plain)
    evidence = {"model": "m1", "input_tokens": 1200, "output_tokens": 300, "cost_usd": 0.42}
    assert found["delivery"]["evidence"] == {**evidence, "reported_by_runner": True}
    assert found["evidence"]["cost_usd"] == 0.42 and found["evidence"]["input_tokens"] == 1200
    assert "Reported by the runner:" in plain.status_comments()[0]


async def test_a_b_a_is_refused_at_the_third_delivery_naming_attempt_1(plain: World) -> None:
    """Back to attempt 1's commit after a send-back of attempt 2: refused, attempt 1 named."""
    await plain.say("rachel", "/publish")
    await plain.say("cody", "/claim")
    for commit in (A, B):
        await plain.say("cody", f"/deliver commit={commit} Try.")
        await plain.say("rita", "/send-back Not yet.")
    await plain.say("cody", f"/deliver commit={A} Try the first again.")
    assert status(plain)["work"] == "claimed"
    assert any("attempt 1's delivery" in reply for reply in plain.replies())


async def test_the_eleventh_attempt_is_refused_by_default(plain: World) -> None:
    """Ten deliveries sent back: the send-back that would open attempt 11 is `attempt_limit`."""
    await plain.say("rachel", "/publish")
    await plain.say("cody", "/claim")
    for n in range(1, 11):
        await plain.say("cody", f"/deliver commit={n:040x} Try {n}.")
        await plain.say("rita", "/send-back Not yet.")
    found = status(plain)
    assert (found["work"], found["attempt"]) == ("delivered", 10)
    assert any("attempt 11" in reply and '"code":"attempt_limit"' in reply for reply in plain.replies())


async def test_a_runner_over_its_monthly_budget_cannot_claim(budgeted: World) -> None:
    """cody's delivery on #12 reports $1.50 against a $1 monthly limit: `/claim` on #14 is refused;
    #12 itself is not over its $2 budget."""
    world = budgeted
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.say("cody", f"/deliver commit={A} cost=1.50 Done.")
    await world.say("rachel", "/publish", number=14)
    await world.say("cody", "/claim", number=14)
    assert status(world, 14)["work"] == "open"
    assert any('"code":"budget_exhausted"' in reply for reply in world.replies(14))
    assert status(world)["evidence"]["over_budget"] is False


async def test_the_api_evidence_object_is_recorded_and_a_bad_one_is_a_clear_400(plain: World) -> None:
    """`"evidence": {...}` beside `/deliver` lands on the delivery; a negative cost is a 400."""
    from tests.e2e.test_api import command

    assert (await command(plain, "rachel", "/publish"))[0] == 200
    assert (await command(plain, "cody", "/claim"))[0] == 200
    bad = {"model": "m1", "cost_usd": -1}
    code, answer, _ = await command(plain, "cody", f"/deliver commit={A}\nDone.", evidence=bad)
    assert (code, answer["error"]["code"]) == (400, "bad_evidence")
    evidence = {"model": "m1", "input_tokens": 1200, "output_tokens": 300, "cost_usd": 0.42}
    code, answer, _ = await command(plain, "cody", f"/deliver commit={A}\nDone.", evidence=evidence)
    assert code == 200, answer
    assert answer["status"]["delivery"]["evidence"] == {**evidence, "reported_by_runner": True}
    assert answer["status"]["evidence"]["cost_usd"] == 0.42


async def test_a_reopen_by_a_reviewer_lets_the_work_be_claimed_again_past_the_attempt_limit(
    two_attempts: World,
) -> None:
    """`attempts_per_ticket: 2`: the send-back that would open attempt 3 is `attempt_limit`; its
    hint, a `/reopen` with a rethink, works: the next `/claim` opens attempt 3, and the limit
    counts two attempts from the reopen. The claimant giving the work up resets nothing."""
    world = two_attempts
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.say("cody", f"/deliver commit={A} Try 1.")
    await world.say("rita", "/send-back Not yet.")
    await world.say("cody", f"/deliver commit={B} Try 2.")
    await world.say("rita", "/send-back Still not.")
    assert any('"code":"attempt_limit"' in reply for reply in world.replies())
    await world.say("rita", "/reopen Rethought the work: split into smaller steps.")
    await world.say("cody", "/claim")
    assert (status(world)["work"], status(world)["attempt"]) == ("claimed", 3)
    await world.say("cody", "/reopen Giving it up.")  # the claimant's own: no fresh allowance
    await world.say("cody", "/claim")
    assert (status(world)["work"], status(world)["attempt"]) == ("claimed", 4)
    await world.say("cody", "/reopen Giving it up again.")
    await world.say("cody", "/claim")
    assert status(world)["work"] == "open"
    assert world.replies()[-1].count('"code":"attempt_limit"') == 1


async def test_an_api_commands_answer_carries_the_watchdogs_due_times(plain: World) -> None:
    """The status object in a `POST .../commands` answer carries `watch` after a `/claim` (its
    silence limit as claimed) and `review_due_at` after a `/deliver`, as `GET` does; the same
    request replayed under its key carries them too while the ticket has not moved on."""
    from tests.e2e.test_api import TICKETS, call, command

    assert (await command(plain, "rachel", "/publish"))[0] == 200
    code, claimed, _ = await command(plain, "cody", "/claim --check-in 60", key="claim-12")
    assert code == 200 and claimed["status"]["work"] == "claimed", claimed
    assert claimed["status"]["watch"] is not None and claimed["status"]["watch"]["limit_minutes"] == 60
    # The claimant speaks: a new silence starts, the ticket's revision stays. A replay is the
    # answer kept when the claim applied, byte for byte, not one rewritten with today's clocks.
    spoke = (datetime.now(UTC) + timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    await plain.say("cody", "Still on it.", created_at=spoke)
    code, again, headers = await command(plain, "cody", "/claim --check-in 60", key="claim-12")
    assert (code, headers.get("Idempotent-Replayed")) == (200, "true")
    assert again == claimed
    _, now_shown, _ = await call(plain, "cody", "GET", f"{TICKETS}/12")
    assert now_shown["revision"] == claimed["status"]["revision"]
    assert now_shown["watch"]["silent_since"] != claimed["status"]["watch"]["silent_since"]
    code, delivered, _ = await command(plain, "cody", f"/deliver commit={A}\nDone.")
    assert code == 200 and delivered["status"]["review_due_at"] is not None, delivered
