"""Identity end to end: accounts by user id, relations backed at execution, no tickets from
pull requests, and one reply limit for every kind of reply. Each test reproduces a hole found
through the real server with signed webhooks (issue 12, items 1, 2, 3 and 10)."""

from __future__ import annotations

from support.world import REPO, World


async def accept_ticket_12(world: World) -> None:
    """rachel publishes #12 (owned by its assignee olivia), cody delivers, rita accepts."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.say("cody", "/deliver branch=agent/12-fix\nUploads resume.")
    await world.say("rita", "/accept")
    assert world.ticket().work.value == "accepted"


async def test_an_account_that_registered_the_owners_freed_login_cannot_reopen(world: World) -> None:
    """olivia renames her account and mallory registers "olivia": only the real owner may reopen."""
    await accept_ticket_12(world)
    world.github.rename_user("olivia", "olivia-renamed")
    world.github.register_user("olivia")
    await world.say("olivia", "/reopen I own this now")
    assert world.ticket().work.value == "accepted"
    assert "Refused" in world.replies()[-1]
    await world.say("olivia-renamed", "/reopen Regressed after the CDN change.")
    ticket = world.ticket()
    assert ticket.work.value == "open"
    assert ticket.owner == "olivia-renamed"  # the current login is shown
    assert ticket.owner_id == world.github.user_id("olivia-renamed")


async def test_a_renamed_claimant_keeps_the_claim_and_an_impostor_gets_nothing(world: World) -> None:
    """The claimant's account delivers under its new login; an account with its old login cannot."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    world.github.rename_user("cody", "cody-renamed")
    world.github.register_user("cody")
    world.github.team_memberships[("acme", "agents", "cody-renamed")] = "active"
    await world.say("cody", "/deliver branch=agent/12-fix\nNot my work.")
    assert world.ticket().work.value == "claimed"
    await world.say("cody-renamed", "/deliver branch=agent/12-fix\nUploads resume.")
    ticket = world.ticket()
    assert ticket.work.value == "delivered"
    assert (ticket.claimant, ticket.last_delivery.runner) == ("cody-renamed", "cody-renamed")


async def test_events_record_the_account_id_of_their_actor(world: World) -> None:
    """Every command event stores the user id beside the login (rail events are railyard's own)."""
    await accept_ticket_12(world)
    with world.database.read() as connection:
        rows = connection.exec_driver_sql(
            "SELECT actor, actor_id FROM ticket_events WHERE type IN "
            "('created', 'published', 'claimed', 'delivered', 'accepted')"
        ).all()
    assert {(actor, actor_id) for actor, actor_id in rows} == {
        (login, world.github.user_id(login)) for login in ("rachel", "cody", "rita")
    }


async def test_a_claimant_removed_from_the_runners_cannot_deliver_even_after_acceptance(world: World) -> None:
    """cody leaves @acme/agents: his /deliver is refused, and accepted stays accepted."""
    await accept_ticket_12(world)
    del world.github.team_memberships[("acme", "agents", "cody")]
    world.github.repositories[REPO].branches["agent/12-more"] = "a" * 40
    await world.say("cody", "/deliver branch=agent/12-more\nOne more thing.")
    assert world.ticket().work.value == "accepted"
    assert "no longer holds runner" in world.replies()[-1]


async def test_a_claimant_removed_from_the_runners_may_still_give_the_work_up(world: World) -> None:
    """Giving the work up with /reopen needs no role."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    del world.github.team_memberships[("acme", "agents", "cody")]
    await world.say("cody", "/deliver branch=agent/12-fix\nDone.")
    assert world.ticket().work.value == "claimed"
    await world.say("cody", "/reopen Moving to another team.")
    ticket = world.ticket()
    assert (ticket.work.value, ticket.claimant) == ("open", None)


async def test_publish_in_a_pull_request_comment_creates_no_ticket(world: World) -> None:
    """On a PR saying `Fixes #61`, /publish and /draft are refused with a reply; #61 stays an issue."""
    world.github.add_issue(REPO, 61, body="Flaky upload test")
    world.github.add_pull(REPO, 36, body="Fixes #61", head_ref="fix/61", head_sha="6" * 40)
    await world.say("rachel", "/publish", number=36, pr=True)
    await world.say("rachel", "/draft", number=36, pr=True)
    assert world.ticket(61) is None
    replies = world.replies(36)
    assert len(replies) == 2
    assert all("pull requests never create tickets" in reply for reply in replies)


async def test_every_kind_of_reply_to_one_account_counts_toward_its_limit(world: World) -> None:
    """nora, with no role, posts near misses, /help and /status: three replies, one reaction, silence."""
    await world.say("rachel", "/publish")
    comments = []
    for body in ("/claimm", "/help", "/acept", "/stauts") * 2:
        comments.append(await world.say("nora", body))
    nora_replies = [reply for reply in world.replies() if "nora" in reply or "railyard commands" in reply]
    assert len(nora_replies) == 3
    assert [world.reactions_to(comment_id) for comment_id in comments[3:]] == [["confused"]] + [[]] * 4


async def test_the_reply_limit_is_per_account_not_per_login(world: World) -> None:
    """Another account replies normally while nora is over her limit."""
    await world.say("rachel", "/publish")
    for _ in range(4):
        await world.say("nora", "/claimm")
    await world.say("rita", "/claimm")
    assert any("rita" in reply and "/claim" in reply for reply in world.replies())
