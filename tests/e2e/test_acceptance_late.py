"""An `/accept` and code pushed after it was written, end to end: the known limit of a
`/deliver` that names a branch or a pull request, resolved to a commit when railyard runs it
(docs/commands.md). Both stay strict xfails until the delivery binds what was named when it was
written."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from support.world import CONFIG, REPO, pull_request_payload
from tests.e2e.test_acceptance import CHANGED, Setup, _world, check

LIMIT = (
    "known limit (docs/commands.md): a /deliver naming a branch or PR is resolved when railyard runs it; "
    "a push between the comment and the run is what is delivered, and an /accept written in between "
    "binds it (refusing every decision written before the run refused honest reviews whenever GitHub "
    "delivered late: the chaos campaign's replay)"
)


@pytest.fixture
async def accepting(tmp_path: Path) -> AsyncIterator[Setup]:
    """As tests/e2e/test_acceptance.py's: acceptances expire after a day, cody reviews too."""
    config = CONFIG + "acceptance:\n  expires_after_days: 1\nagents: ['@acme/agents']\n"
    async for setup in _world(tmp_path, config):
        yield setup


@pytest.mark.xfail(strict=True, reason=LIMIT)
@pytest.mark.parametrize("late", [False, True], ids=["backlog", "the accept received late"])
async def test_an_accept_never_binds_a_commit_pushed_after_it_was_written(
    accepting: Setup, late: bool
) -> None:
    """cody writes `/deliver branch=agent/12-fix` (the branch at FIX) and rita, reading FIX, writes
    `/accept` right after. railyard is behind (a backlog, or GitHub unreachable and the command
    retried): before it runs the `/deliver`, cody pushes CHANGED to the branch and the PR. The
    delivery resolves the branch head as it is then, CHANGED, and rita's earlier `/accept` (written
    after the `/deliver` comment, so not stale) binds CHANGED, a commit that did not exist when she
    wrote it: the check on the PR's head CHANGED is green. `late`: her `/accept` reaches railyard
    only after it ran the `/deliver` (a failed delivery sent again minutes later), both comments
    written a minute and half a minute before."""
    world, _ = accepting
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.send("pull_request", pull_request_payload("opened", 34, "Fixes #12"))
    deliver = world.write("cody", "/deliver branch=agent/12-fix Resumable uploads with a retry cap.")
    accept = world.write("rita", "/accept")
    if late:
        now = datetime.now(UTC)
        for payload, ago in ((deliver, 60), (accept, 30)):
            payload["comment"]["created_at"] = (now - timedelta(seconds=ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    repository = world.github.repositories[REPO]
    repository.branches["agent/12-fix"] = repository.pulls[34].head_sha = CHANGED  # pushed after both
    for payload in (deliver, accept):
        response = await world.server.deliver("issue_comment", json.dumps(payload).encode())
        assert response.status == 202
        if late:
            await world.settle()  # the /accept's webhook arrives after the /deliver ran
    await world.settle()
    await world.send(
        "pull_request",
        pull_request_payload("synchronize", 34, "Fixes #12", head=CHANGED, updated="2026-11-30T10:00:05Z"),
    )
    review = world.ticket().review
    assert review is None or review.commit != CHANGED, "rita's /accept bound a commit pushed after it"
    assert check(world, CHANGED)[0] == "action_required"
