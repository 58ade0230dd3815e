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


async def test_report_json_sums_reported_cost_per_runner_and_per_model_and_labels_per_requester(
    world: World,
) -> None:
    """Two deliveries with evidence, one accepted: cost sums per runner and model, the label's rate 50 %."""
    world.github.repositories[REPO].issues[12].labels.append("area:upload")
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.say(
        "cody", "/deliver branch=agent/12-fix model=m1 tokens_in=1200 tokens_out=300 cost=0.42\nDone."
    )
    await world.say("rita", "/send-back The upload still restarts from zero.")
    world.github.repositories[REPO].branches["agent/12-fix"] = "9" * 40
    await world.say(
        "cody", "/deliver branch=agent/12-fix model=m2 tokens_in=100 tokens_out=50 cost=0.08\nResumes."
    )
    await world.say("rita", "/accept")

    figures = cli_json(world, "report", "--repo", REPO)
    assert set(figures) == {"runners", "reviewers", "models", "requesters", "labels"}
    [runner] = figures["runners"]
    assert (runner["input_tokens"], runner["output_tokens"], runner["cost_usd"]) == (1300, 350, "0.5")
    assert (runner["accepted_tickets"], runner["cost_per_accepted_ticket"]) == (1, "0.5")
    models = {
        m["model"]: (m["deliveries"], m["cost_usd"], m["cost_per_accepted_ticket"]) for m in figures["models"]
    }
    assert models == {"m1": (1, "0.42", None), "m2": (1, "0.08", "0.08")}
    [requester] = figures["requesters"]
    assert (requester["requester"], requester["requester_id"]) == ("rachel", account_id("rachel"))
    assert (requester["tickets"], requester["send_back_rate"]) == (1, 0.5)
    assert [(b["label"], b["tickets"], b["send_back_rate"]) for b in figures["labels"]] == [
        ("area:upload", 1, 0.5)
    ]
