"""Idempotency keys over time (SPEC *Agent interface*; docs/api.md *Once*): a key's kept answer
is pruned after 24 hours, but the key is still the operation id, so it must never carry one
ticket's outcome onto another ticket's request."""

from __future__ import annotations

import json
import time

from app.store.retention import prune_api_answers
from app.store.tickets import TicketService
from policies.model import TicketKey
from support.world import REPO, World
from tests.e2e.test_api import command


async def test_a_key_reused_on_another_ticket_after_its_answer_was_pruned_is_422_not_the_old_outcome(
    world: World,
) -> None:
    """cody claims #12 under key K; a day later (K's answer pruned) K is sent with `/claim` for
    #13: 422 idempotency_key_reused, #13 stays open, and the answer carries nothing of #12. (Found
    in review: the door replayed #12's claim, answered 200 "applied" with #12's status as it is
    now, and kept that as #13's answer, while #13 was never claimed.)"""
    world.github.repositories[REPO].issues[13].body = "Thirteen"
    await world.say("rachel", "/publish")
    await world.say("rachel", "/publish", 13)
    status, first, _ = await command(world, "cody", "/claim", 12, key="K")
    assert status == 200 and first["applied"] is True
    assert prune_api_answers(world.database, time.time() + 25 * 3600, 24) == 1
    status, again, headers = await command(world, "cody", "/claim", 13, key="K")
    assert status == 422, again
    assert again["error"]["code"] == "idempotency_key_reused"
    assert headers.get("Idempotent-Replayed") is None
    assert f"{REPO}#12" not in json.dumps(again)
    thirteen = TicketService(world.database).load(TicketKey(REPO, 13))
    assert thirteen is not None and thirteen.work is not None and thirteen.work.value == "open"
    status, replayed, _ = await command(world, "cody", "/claim", 13, key="K")
    assert status == 422 and replayed["error"]["code"] == "idempotency_key_reused"  # nothing was kept


async def test_the_same_request_again_after_its_answer_was_pruned_still_applies_once(world: World) -> None:
    """The same key and body after 24 hours: the current outcome, one `claimed` event."""
    await world.say("rachel", "/publish")
    assert (await command(world, "cody", "/claim", 12, key="K"))[0] == 200
    prune_api_answers(world.database, time.time() + 25 * 3600, 24)
    status, again, headers = await command(world, "cody", "/claim", 12, key="K")
    assert status == 200 and again["applied"] is True and headers["Idempotent-Replayed"] == "true"
    history = TicketService(world.database).history(TicketKey(REPO, 12))
    assert [r.event.type.value for r in history].count("claimed") == 1
