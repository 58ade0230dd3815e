"""`GET /api/v1/repos/{owner}/{repo}/tickets/{number}/events` end to end: the real server, GitHub
the stand-in; the log is the one `railyard events --json` prints, behind the ticket's checks."""

from __future__ import annotations

from app.store.tickets import TicketService
from app.views.event_log import event_items
from policies.model import TicketKey
from support.world import REPO, World
from tests.e2e.test_api import TICKETS, call, command


async def test_the_event_log_is_the_cli_log_in_revision_order(world: World) -> None:
    """After a publish, a claim through the API, a refused claim and a reopen, the answer holds every
    event in revision order, exactly as `railyard events --json` serialises them."""
    await world.say("rachel", "/publish")
    assert (await command(world, "cody", "/claim"))[0] == 200
    await world.say("nora", "/claim")  # refused: a `command_rejected` item
    await world.say("rita", "/reopen Wrong approach")
    status, answer, _ = await call(world, "rita", "GET", f"{TICKETS}/12/events")
    assert status == 200 and answer["ticket"] == f"{REPO}#12"
    items = answer["events"]
    kinds = [(item["revision"], item["type"]) for item in items]
    expected = [(1, "created"), (2, "published"), (3, "claimed"), (3, "command_rejected"), (4, "reopened")]
    assert kinds == expected, kinds
    service, key = TicketService(world.database), TicketKey(REPO, 12)
    assert items == event_items(service.history(key), service.refusals(key))
    claimed = items[2]
    assert (claimed["actor"], claimed["role"], claimed["metadata"]["via"]) == ("cody", "runner", "api")
    assert claimed["actor_id"] and claimed["operation_id"].startswith("api:") and claimed["policy_version"]
    assert items[4]["metadata"]["previous_claimant"] == "cody"


async def test_the_event_log_needs_a_token_and_a_ticket(world: World) -> None:
    """No token is 401; an issue that is no ticket, and a malformed number, are 404."""
    await world.say("rachel", "/publish")
    status, answer, headers = await call(world, None, "GET", f"{TICKETS}/12/events")
    assert status == 401 and answer["error"]["code"] == "unauthenticated"
    assert headers["WWW-Authenticate"].startswith("Bearer")
    for number in ("40", "0", "x"):
        status, answer, _ = await call(world, "rita", "GET", f"{TICKETS}/{number}/events")
        assert status == 404 and answer["error"]["code"] == "not_a_ticket"
    status, _, headers = await call(world, "rita", "POST", f"{TICKETS}/12/events")
    assert (status, headers["Allow"]) == (405, "GET")


async def test_a_reader_without_access_to_a_private_repository_gets_404_like_the_ticket(world: World) -> None:
    """mallory cannot read the private repository: its events are 404 as its ticket is; rita can."""
    await world.say("rachel", "/publish")
    world.github.repository(REPO).private = True  # type: ignore[union-attr]
    world.github.permissions[(REPO, "rita")] = "read"
    assert (await call(world, "rita", "GET", f"{TICKETS}/12/events"))[0] == 200
    for path in (f"{TICKETS}/12", f"{TICKETS}/12/events"):
        status, answer, _ = await call(world, "mallory", "GET", path)
        assert status == 404 and answer["error"]["code"] == "no_such_repository"
