"""The Re-run button on the `railyard` check, through the real server and the GitHub stand-in."""

from __future__ import annotations

from typing import Any

from support.world import FIX, REPO, World, event_payload, pull_request_payload

APP_ID = 1  # the e2e server's APP_ID


def check_writes(world: World) -> int:
    """How many times GitHub was asked to create or update a `railyard` check-run on FIX."""
    posts = [
        c
        for c in world.github.calls_to("POST", f"/repos/{REPO}/check-runs")
        if (c.body or {}).get("head_sha") == FIX and c.status == 201
    ]
    patches = [c for c in world.github.calls_to("PATCH", f"/repos/{REPO}/check-runs/") if c.status == 200]
    return len(posts) + len(patches)


def rerequested(kind: str, name: str) -> dict[str, Any]:
    """GitHub's example `rerequested` payload, for this app's check on FIX, which PR #34 shows."""
    payload = event_payload(kind, name)
    item = payload[kind]
    item.update({"head_sha": FIX, "pull_requests": [{"number": 34, "head": {"sha": FIX}}]})
    item["app"] = {**item["app"], "id": APP_ID}
    if kind == "check_run":
        item["name"] = "railyard"
    return payload


async def test_re_run_of_the_check_writes_it_again(world: World) -> None:
    """`check_run` `rerequested` on the `railyard` check: the outbox writes that check again."""
    await world.send("pull_request", pull_request_payload("opened", 34, "Fixes #12"))
    written = check_writes(world)
    assert written >= 1
    await world.send("check_run", rerequested("check_run", "08-rerequested.json"))
    assert check_writes(world) == written + 1
    assert (
        len([r for r in world.github.check_runs.values() if r.head_sha == FIX and r.name == "railyard"]) == 1
    )


async def test_re_run_of_the_suite_writes_the_check_again(world: World) -> None:
    """`check_suite` `rerequested` for this app's suite: the outbox writes the check again."""
    await world.send("pull_request", pull_request_payload("opened", 34, "Fixes #12"))
    written = check_writes(world)
    await world.send("check_suite", rerequested("check_suite", "08-rerequested.json"))
    assert check_writes(world) == written + 1


async def test_re_run_on_a_pull_request_railyard_never_heard_of_judges_the_tickets_it_links(
    world: World,
) -> None:
    """#12 is a claimed ticket; PR #34 on GitHub says `Fixes #12`, but its `opened` webhook never
    reached railyard (GitHub does not redeliver on its own). Someone presses Re-run on this app's
    suite on FIX: the check railyard writes must judge #12 (awaiting delivery), not pass the PR
    as one that links nothing."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    assert world.github.repositories[REPO].pulls[34].body == "Fixes #12"
    await world.send("check_suite", rerequested("check_suite", "08-rerequested.json"))
    [run] = [r for r in world.github.check_runs.values() if r.head_sha == FIX and r.name == "railyard"]
    assert run.conclusion == "action_required", (run.conclusion, run.output["title"])
