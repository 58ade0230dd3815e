"""The release owner's command line over what the real server recorded from signed webhooks."""

from __future__ import annotations

import io
import json
from typing import Any

from app.cli import main
from app.settings import Settings
from github_standin import account_id
from support.world import REPO, World, pull_request_payload


def cli_json(world: World, *argv: str) -> Any:
    """What `railyard ARGV --json` prints against the server's database, read as JSON."""
    out, err = io.StringIO(), io.StringIO()
    code = main([*argv, "--json"], settings=Settings(DATABASE_URL=world.database.url), out=out, err=err)
    assert code == 0, err.getvalue()
    return json.loads(out.getvalue())


async def delivered(world: World) -> None:
    """#12 published by rachel, claimed and delivered by cody on agent/12-fix."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.say("cody", "/deliver branch=agent/12-fix\nDone.")


async def test_a_ticket_merged_without_acceptance_is_flagged_merged_not_accepted(world: World) -> None:
    """#12 delivered and its PR merged with no /accept: `tickets --json` (and `--attention`) flag it."""
    await delivered(world)
    [before] = cli_json(world, "tickets")
    assert before["attention"] == ["awaiting_review"]
    merged = pull_request_payload("closed", 34, "Fixes #12", merged=True, state="closed")
    await world.send("pull_request", merged)

    [item] = cli_json(world, "tickets", "--repo", REPO)
    assert item["ticket"] == f"{REPO}#12"
    assert (item["work"], item["integration"]) == ("delivered", "merged")
    assert "merged_not_accepted" in item["attention"]
    assert [i["ticket"] for i in cli_json(world, "tickets", "--attention")] == [f"{REPO}#12"]
    assert cli_json(world, "tickets", "--work", "accepted") == []


async def test_report_gives_a_runners_deliveries_send_backs_and_rate_after_a_round_trip(
    world: World,
) -> None:
    """Delivered, sent back by rita, delivered again, accepted: cody has 2 deliveries, 1 sent back, 50 %."""
    await delivered(world)
    await world.say("rita", "/send-back The upload still restarts from zero.")
    world.github.repositories[REPO].branches["agent/12-fix"] = "9" * 40
    await world.say("cody", "/deliver branch=agent/12-fix\nResumes now.")
    await world.say("rita", "/accept")
    assert world.ticket().work.value == "accepted"

    figures = cli_json(world, "report", "--repo", REPO, "--since", "2020-01-01")
    [runner] = figures["runners"]
    assert (runner["runner"], runner["runner_id"]) == ("cody", account_id("cody"))
    assert (runner["deliveries"], runner["sent_back"], runner["accepted"]) == (2, 1, 1)
    assert runner["send_back_rate"] == 0.5
    [reviewer] = figures["reviewers"]
    assert (reviewer["reviewer"], reviewer["reviewer_id"]) == ("rita", account_id("rita"))
    assert (reviewer["decisions"], reviewer["accepted"], reviewer["sent_back"]) == (2, 1, 1)
