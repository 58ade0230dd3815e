"""Idempotency keys over time (SPEC *Agent interface*; docs/api.md *Once*): a key's kept answer
is pruned after 24 hours, but the key is still the operation id, so it must never carry one
ticket's outcome onto another ticket's request."""

from __future__ import annotations

import json
import time

from app.store.repositories import holder_of
from app.store.retention import prune_api_answers
from app.store.tickets import TicketService
from github_standin.events import repository_moved
from policies.model import TicketKey
from support.world import CONFIG, REPO, World
from tests.e2e.test_api import call, command

TOOLS = "acme/tools"


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


async def refused_then_renamed(world: World) -> None:
    """cody (a runner, not a requester) sends `/publish` on acme/web#13, not a ticket yet, under
    key K: refused before any ticket row exists (an operation with no ticket id). GitHub renames
    acme/web to acme/tools, its `renamed` webhook is processed, and K's kept answer is pruned."""
    status, first, _ = await command(world, "cody", "/publish", 13, key="K")
    assert status == 403 and first["refusal"]["code"] == "not_allowed", (status, first)
    assert TicketService(world.database).load(TicketKey(REPO, 13)) is None
    moved = world.github.rename_repository(REPO, TOOLS)
    guid, renamed = repository_moved(world.github, "https://api.github.com", moved, REPO, 7, "max")
    assert (await world.server.deliver("repository", json.dumps(renamed).encode(), guid)).status == 202
    await world.settle()
    assert prune_api_answers(world.database, time.time() + 25 * 3600, 24) == 1


async def test_a_refusal_before_the_ticket_replays_after_a_rename_once_its_answer_was_pruned(
    world: World,
) -> None:
    """The same request again, on acme/tools#13 (the same repository, the same id): the refusal
    replayed, not 422. (The door compared the stored operation's name, acme/web, with the retry's.)"""
    await refused_then_renamed(world)
    path = f"/api/v1/repos/{TOOLS}/tickets/13/commands"
    status, again, headers = await call(world, "cody", "POST", path, {"command": "/publish"}, "K")
    assert status == 403 and again["refusal"]["code"] == "not_allowed", (status, again)
    assert headers["Idempotent-Replayed"] == "true"
    assert TicketService(world.database).load(TicketKey(TOOLS, 13)) is None


async def test_the_key_on_a_new_repository_under_the_old_name_is_still_422(world: World) -> None:
    """After the rename, a new repository takes the name acme/web (another id), with an #13 of
    its own (not a ticket; rachel publishes #40 there): cody's `/publish` on its #13 under K is
    a key reused on another ticket (422), never the renamed repository's refusal replayed. (By
    name, the door took it for the same ticket.)"""
    await refused_then_renamed(world)
    world.github.add_repository(REPO, files={".github/railyard.yml": CONFIG})
    world.github.add_issue(REPO, 13, body="Another thirteen")
    assert world.github.repositories[REPO].id != world.github.repositories[TOOLS].id
    world.github.add_issue(REPO, 40, body="Forty")
    payload = world.write("rachel", "/publish", 40)  # the new acme/web's first webhook: its id placed
    payload["repository"]["id"] = world.github.repositories[REPO].id
    await world.send("issue_comment", payload)
    assert holder_of(world.database, REPO) == world.github.repositories[REPO].id
    status, again, headers = await command(world, "cody", "/publish", 13, key="K")
    assert status == 422, again
    assert again["error"]["code"] == "idempotency_key_reused"
    assert headers.get("Idempotent-Replayed") is None
    assert TicketService(world.database).load(TicketKey(REPO, 13)) is None
