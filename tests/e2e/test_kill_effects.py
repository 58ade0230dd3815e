"""At most one visible effect across a kill: the server is SIGKILLed after GitHub created a
comment but before railyard recorded it; the restarted server finds that comment instead of
writing a second one."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from pathlib import Path

import aiohttp

from app.contracts.effect_types import status_key
from app.store.database import Database
from app.store.effects import effect_counts, marker
from github_standin import Fault, StandinState, running_standin
from support.world import FIX, REPO, comment_payload, pull_request_payload, standin_state
from tests.fakes import ServerProcess, server_env, signed_headers


async def until(condition: Callable[[], bool], timeout: float = 120.0) -> None:
    """Poll a condition until it holds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError("condition not reached")
        await asyncio.sleep(0.05)


def app_comments(state: StandinState, number: int) -> list[str]:
    """The bodies of the comments the app wrote on the issue."""
    return [c.body for c in state.comments.values() if c.issue_number == number and c.app_id]


def publish(state: StandinState) -> tuple[str, bytes]:
    """rachel's `/publish` on #12, as GitHub delivers it."""
    written = state.add_comment(REPO, 12, "/publish", user="rachel", user_type="User")
    return "issue_comment", json.dumps(comment_payload("rachel", "/publish", 12, id=written.id)).encode()


def open_pull(state: StandinState) -> tuple[str, bytes]:
    """PR #34, `Fixes #12`, opened on the fix branch."""
    return "pull_request", json.dumps(pull_request_payload("opened", 34, "Fixes #12")).encode()


def claim_by_nora(state: StandinState) -> tuple[str, bytes]:
    """nora, who holds no role, tries `/claim` on #12: railyard answers with a refusal."""
    written = state.add_comment(REPO, 12, "/claim", user="nora", user_type="User")
    return "issue_comment", json.dumps(comment_payload("nora", "/claim", 12, id=written.id)).encode()


Event = Callable[[StandinState], tuple[str, bytes]]


async def kill_after_create(
    tmp_path: Path,
    state: StandinState,
    path: str,
    before: list[Event],
    event: Event,
    created: Callable[[], int],
) -> None:
    """Deliver `before` and let it settle; then `event`, whose first create on `path` is
    performed but never answered; SIGKILL the server once GitHub has it, start it again and
    wait until every write is settled."""
    async with running_standin(state) as standin:
        url = f"sqlite:///{tmp_path}/railyard.db"
        server = ServerProcess(env=server_env(url, standin.url), cwd=tmp_path)
        await server.start()
        database = Database(url)
        async with aiohttp.ClientSession() as client:
            for earlier in before:
                await deliver(client, server, state, earlier)
                await until(lambda: effect_counts(database).get("done", 0) > 0)
                await until(lambda: not effect_counts(database).get("pending"))
            # The create is performed, then the answer is held back past the client's timeout.
            state.inject("POST", path, Fault(apply_then_timeout=True, delay=60))
            await deliver(client, server, state, event)
        await until(lambda: created() > 0)
        server.kill()  # GitHub has it; railyard has not heard back

        await server.start()
        await until(lambda: not effect_counts(database).get("pending"))
        server.stop()
        assert effect_counts(database).get("failed") is None


async def deliver(
    client: aiohttp.ClientSession, server: ServerProcess, state: StandinState, event: Event
) -> None:
    """GitHub sends the event; the server stores it."""
    name, body = event(state)
    headers = signed_headers(body, name, str(uuid.uuid4()))
    async with client.post(f"{server.url}/webhooks", data=body, headers=headers) as response:
        assert response.status == 202


async def test_killed_after_github_created_the_status_comment_the_restart_writes_no_second(
    tmp_path: Path,
) -> None:
    """GitHub creates the status comment and never answers; SIGKILL; after the restart: one status comment."""
    state = standin_state()
    status = marker(status_key(REPO, 12))

    def status_comments() -> int:
        return len([body for body in app_comments(state, 12) if status in body])

    await kill_after_create(
        tmp_path, state, rf"/repos/{REPO}/issues/12/comments$", [], publish, status_comments
    )
    assert status_comments() == 1


async def test_killed_after_github_created_the_check_run_the_restart_creates_no_second(
    tmp_path: Path,
) -> None:
    """GitHub creates the `railyard` check-run, never answers; SIGKILL; after the restart: one check-run."""
    state = standin_state()

    def check_runs() -> int:
        return len([r for r in state.check_runs.values() if r.name == "railyard" and r.head_sha == FIX])

    await kill_after_create(tmp_path, state, rf"/repos/{REPO}/check-runs$", [publish], open_pull, check_runs)
    assert check_runs() == 1


async def test_killed_after_github_created_a_refusal_reply_the_restart_writes_no_second(
    tmp_path: Path,
) -> None:
    """The reply to a refused command carries its effect's marker: after a kill it is found, not repeated."""
    state = standin_state()

    def refusals() -> int:
        return len([body for body in app_comments(state, 12) if "Refused" in body and "/claim" in body])

    await kill_after_create(
        tmp_path, state, rf"/repos/{REPO}/issues/12/comments$", [publish], claim_by_nora, refusals
    )
    assert refusals() == 1
