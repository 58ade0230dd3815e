"""A short chaos campaign (bench/chaos.py) on SQLite: kills, copies, shuffles and a failing
GitHub bend nothing in the record."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import time
from pathlib import Path

from sqlalchemy import select, update

from app.store.effects import effects_table, enqueue, reaction
from bench.chaos import Options, Violated, campaign
from github_standin import Fault, running_standin
from support.world import REPO, World, standin_state
from tests.conftest import sqlite_database
from tests.fakes import app_settings, running_server


async def test_a_short_chaos_campaign_finds_no_violation(tmp_path: Path) -> None:
    """With the server SIGKILLed every few seconds, deliveries sent up to three times and GitHub
    failing, every acknowledged delivery is processed once, GitHub shows each intended effect
    once, and the rails equal a clean replay's."""
    options = Options(
        minutes=0.3,
        tickets_at_once=2,
        gap=0.4,
        kill_every=(1.0, 3.5),
        kill_after_write=0.7,
        # A killed server's leases run out after 15 s; what waits for a retry is made due when
        # the faults stop. The settle ends as soon as everything is done.
        settle=60.0,
        workdir=tmp_path,
        faults={
            "server_error": 0.05,
            "error_after_effect": 0.1,
            "drop_after_effect": 0.1,
            "timeout_after_effect": 0.0,  # a stall lasts past the client's 15 s timeout: too slow here
            "secondary_limit": 0.02,
        },
    )

    report = await campaign(options)

    report.print(options.minutes)
    assert sum(report.figures.kills.values()) >= 3, "the campaign must actually kill the server"
    assert report.faults["5xx after effect"] + report.faults["dropped after effect"] >= 1
    assert report.figures.copies >= 1 and report.figures.redeliveries >= 1
    if report.violations:
        raise Violated(sorted(report.violations))


async def test_a_restarted_sqlite_server_takes_over_the_writes_a_killed_one_had_leased(
    tmp_path: Path,
) -> None:
    """A GitHub write leased by a server that was killed is performed by the next server at once,
    not after its lease runs out (found by the chaos campaign: writes waited 60 s after each kill)."""
    state = standin_state()
    comment = state.add_comment(REPO, 12, "/status", user="rachel")
    url = f"sqlite:///{tmp_path}/railyard.db"
    database = sqlite_database(tmp_path / "railyard.db")
    with database.write() as connection:
        enqueue(connection, [reaction(7, REPO, comment.id)], time.time())
        # The killed server's lease: an hour left, so only a take-over can perform it now.
        connection.execute(update(effects_table).values(lease_until=time.time() + 3600, lease_owner="dead"))
    async with running_standin(state) as standin:
        settings = app_settings(url, GITHUB_API_URL=standin.url, APP_ID="1")
        async with running_server(settings) as server:
            await World(server, state, database).outbox_settled(timeout=30.0)

    assert [r.content for r in state.reactions if r.comment_id == comment.id] == ["+1"]


async def test_a_change_made_while_its_status_comment_is_written_is_shown(world: World) -> None:
    """A change committed while the status comment is being written (GitHub slow to answer) is
    written next: the comment ends up showing the ticket's final state."""
    await world.say("rachel", "/publish")
    # GitHub performs the next edit of the status comment, then takes 3 s to answer.
    world.github.inject("PATCH", r"/issues/comments/\d+$", Fault(apply_then_timeout=True, delay=3.0))
    edits = len(world.github.calls_to("PATCH", f"/repos/{REPO}/issues/comments/"))
    claim = json.dumps(world.write("cody", "/claim", 12)).encode()
    assert (await world.server.deliver("issue_comment", claim)).status == 202  # not waiting for it
    while len(world.github.calls_to("PATCH", f"/repos/{REPO}/issues/comments/")) == edits:
        await asyncio.sleep(0.01)  # the edit showing the claim is on its way
    await world.say("cody", "/reopen Picked the wrong ticket")

    assert world.ticket().work.value == "open"
    assert world.status_comments() == [world.expected_status()]


async def test_a_starting_sqlite_server_leaves_the_leases_of_a_live_process_alone(tmp_path: Path) -> None:
    """A GitHub write leased by a live process on the same file (a `railyard worker` beside the
    server, or the previous server still stopping) is not taken over when a server starts: freed
    from under its holder, a comment that holder has sent would be sent again."""
    state = standin_state()
    comment = state.add_comment(REPO, 12, "/status", user="rachel")
    path = tmp_path / "railyard.db"
    database = sqlite_database(path)
    with database.write() as connection:
        enqueue(connection, [reaction(7, REPO, comment.id)], time.time())
        connection.execute(update(effects_table).values(lease_until=time.time() + 3600, lease_owner="live"))
    # What a live process taking leases on the file holds for as long as it runs.
    holder = os.open(f"{path}-leases.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(holder, fcntl.LOCK_SH)
    try:
        async with running_standin(state) as standin:
            settings = app_settings(f"sqlite:///{path}", GITHUB_API_URL=standin.url, APP_ID="1")
            async with running_server(settings):
                await asyncio.sleep(1.5)  # the outbox looks at once, then every half second
    finally:
        os.close(holder)
    with database.read() as connection:
        owner = connection.execute(select(effects_table.c.lease_owner)).scalar_one()

    assert owner == "live" and [r for r in state.reactions if r.comment_id == comment.id] == []
