"""`blocked_by` in the HTTP API's status objects is judged under the repository's `checks.required`,
as the rail and the status comment are (SPEC *Agent interface*): a failing check the repository
does not require is never named, through the real server and the stand-in."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from support.world import CONFIG, FIX, REPO, World, event_payload, pull_request_payload
from tests.e2e.test_api import TICKETS, call, command

CONFIG_FILE = "/contents/.github/railyard.yml"
LINT_FAILED = [{"pull_request": 50, "reason": "check_failed", "checks": ["lint"]}]


def check(name: str, conclusion: str, check_id: int) -> dict[str, Any]:
    """A CI check run (GitHub Actions') completed on PR #50's head."""
    payload = event_payload("check_run", "02-completed.json")
    payload["check_run"].update(
        {"name": name, "head_sha": FIX, "status": "completed", "conclusion": conclusion, "id": check_id}
    )
    payload["check_run"]["completed_at"] = f"2026-11-30T10:0{check_id}:00Z"
    return payload


async def lint_fails_build_passes(world: World, config: str) -> None:
    """`config` in force; #12 published and claimed; PR #50 fixes it; on its head `lint` failed
    and `build` passed."""
    world.github.repositories[REPO].files[".github/railyard.yml"] = config
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.send("pull_request", pull_request_payload("opened", 50, "Fixes #12"))
    await world.send("check_run", check("lint", "failure", 1))
    await world.send("check_run", check("build", "success", 2))


@pytest.mark.parametrize(
    ("config", "integration", "blocked_by"),
    [
        (CONFIG + "checks:\n  required: [build]\n", "pull_request_open", []),
        (CONFIG, "blocked", LINT_FAILED),
    ],
    ids=["required-build", "every-check"],
)
async def test_the_api_names_only_checks_the_repository_requires(
    world: World, config: str, integration: str, blocked_by: list[Any]
) -> None:
    """`checks.required: [build]`, `lint` failed, `build` passed: the rail is open, and GET, the
    list, a command's answer and an earlier attempt's replayed key (409) all say `blocked_by: []`.
    Without `checks.required` every failing check counts: blocked, by `lint`."""
    await lint_fails_build_passes(world, config)
    assert world.ticket().rails.integration.value == integration
    assert any(c.path.endswith(CONFIG_FILE) for c in world.github.calls)  # read for the webhooks
    before = len(world.github.calls)
    status, ticket, _ = await call(world, "rita", "GET", f"{TICKETS}/12")
    assert status == 200 and ticket["integration"] == integration
    status, listed, _ = await call(world, "rita", "GET", TICKETS)
    assert status == 200 and len(listed["tickets"]) == 1
    read = [c.path for c in world.github.calls[before:] if c.path.endswith(CONFIG_FILE)]
    assert read == []  # the configuration the webhooks read is known: a read asks GitHub nothing more
    deliver = "/deliver branch=agent/12-fix\nDone."
    status, answer, _ = await command(world, "cody", deliver, key="deliver-12")
    assert status == 200 and answer["applied"] is True
    await asyncio.sleep(1.1)  # a comment's time is to the second: the review comes after the delivery
    await world.say("rita", "/send-back The upload still restarts from zero.")
    status, replayed, _ = await command(world, "cody", deliver, key="deliver-12")  # attempt 1's key
    assert status == 409 and replayed["refusal"]["code"] == "earlier_attempt"
    found = {
        "get": ticket["blocked_by"],
        "list": listed["tickets"][0]["blocked_by"],
        "command": answer["status"]["blocked_by"],
        "replay": replayed["status"]["blocked_by"],
    }
    assert found == dict.fromkeys(found, blocked_by)
