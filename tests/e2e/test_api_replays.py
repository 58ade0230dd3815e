"""A kept API answer replayed for its Idempotency-Key: as it was, unless what it reported no
longer holds (`handlers.api.replays_an_earlier_attempt`)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from app.store.retention import prune_api_answers
from github_standin import Fault
from support.world import World
from tests.e2e.test_api import command, delivered, events


async def test_a_send_back_replayed_after_the_runner_gave_up_is_replayed_as_it_was(world: World) -> None:
    """docs/agents.md: only an answer that applied to an earlier attempt, or to a claim or a
    delivery a `/reopen` has released since, is not replayed as applied. rita's `/send-back`
    applied to attempt 2 (the ticket claimed again); cody then gives the work up (`/reopen`: open,
    still attempt 2). rita's client retries its send-back with the same key (its first answer
    was lost): the send-back did apply to this very attempt, so it is replayed as it was (a
    review found it answered 409 `earlier_attempt` because its kept status read `claimed`)."""
    await delivered(world)
    await asyncio.sleep(1.1)  # the review comes after the delivery, to the second
    first = await command(world, "rita", "/send-back The upload still restarts from zero.", key="sb-12")
    assert first[0] == 200 and first[1]["applied"] is True and first[1]["status"]["attempt"] == 2
    await world.say("cody", "/reopen Giving this up: the storage team owns the uploader.")
    assert world.ticket().work.value == "open" and world.ticket().attempt == 2
    again = await command(world, "rita", "/send-back The upload still restarts from zero.", key="sb-12")
    assert again[0] == 200 and again[1] == first[1], again


async def test_a_claim_released_by_reopen_is_not_reported_applied_after_its_answer_was_pruned(
    world: World,
) -> None:
    """docs/agents.md: a stored answer that applied to a claim a `/reopen` has released since is
    never reported as applied (409 `earlier_attempt`); docs/security.md: a replayed key never
    reports a change an earlier attempt got as applied. docs/api.md: kept answers are pruned
    after 24 hours, a retry then gets the current outcome. cody claims #12 through the API
    (`railyard agent claim`'s key has no run attempt: a re-run within GitHub's 30 days sends it
    again), then gives the work up; a day later the key is sent again. The ticket is open and
    unclaimed, yet the answer is 200 `applied: true` (and only the retry after that, finding
    the answer the replay kept, says 409): the agent goes on working on a ticket it does not hold."""
    assert (await command(world, "rachel", "/publish"))[0] == 200
    first = await command(world, "cody", "/claim", key="gha-run-claim-12")
    assert first[0] == 200 and first[1]["applied"] is True
    await world.say("cody", "/reopen Giving this up: the storage team owns the uploader.")
    assert world.ticket().work.value == "open"
    prune_api_answers(world.database, time.time() + 25 * 3600, 24.0)  # a day later: housekeeping
    again = await command(world, "cody", "/claim", key="gha-run-claim-12")
    print(f"\nafter the prune: {again[0]} {again[1].get('applied')} work={world.ticket().work.value}")
    third = await command(world, "cody", "/claim", key="gha-run-claim-12")
    print(f"the retry after that: {third[0]} {third[1].get('applied')}")
    assert world.ticket().work.value == "open"
    assert again[1].get("applied") is not True, again


async def test_a_retry_racing_its_own_claim_is_not_answered_that_the_claim_did_not_apply(
    world: World,
) -> None:
    """docs/api.md: a request replayed with the same key gets the stored answer; docs/agents.md:
    only an answer that applied to an earlier attempt, or to a claim a `/reopen` has released
    since, is not replayed as applied. cody's client sends `/claim` and, its first try slow to
    answer, the same request again with the same key. Both read the ticket (open, no answer
    kept); the second's role check is quick, so it claims #12. The first reaches the door after
    that and is answered by the door's replay, judged against the ticket as it read it before
    the run (open, unclaimed): 409 `earlier_attempt`, "applied": false, the status `open`,
    although cody's claim applied to this very attempt and holds."""
    assert (await command(world, "rachel", "/publish"))[0] == 200
    # The first team read of cody (the first request's role check) is slow: GitHub under load.
    world.github.inject("GET", r"/teams/agents/memberships/cody$", Fault(slow=True, delay=1.5))

    async def retried() -> tuple[int, Any, dict[str, str]]:
        await asyncio.sleep(0.3)  # the client's retry, the first try still in flight
        return await command(world, "cody", "/claim", key="claim-12")

    first, second = await asyncio.gather(command(world, "cody", "/claim", key="claim-12"), retried())
    print(f"\nfirst {first[0]} {first[1]}\nsecond {second[0]} {second[1]}")
    assert world.ticket().work.value == "claimed"
    assert len([e for e in events(world) if e.type.value == "claimed"]) == 1
    for status, answer, _ in (first, second):
        assert status == 200 and answer["applied"] is True, (status, answer)
