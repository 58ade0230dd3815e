"""`/metrics` counts commands by name and outcome, and reads the tickets' rails, from signed webhooks."""

from __future__ import annotations

from support.world import World


async def scrape(world: World) -> str:
    """The `/metrics` text now."""
    async with world.server.client.get("/metrics") as response:
        assert response.status == 200
        return str(await response.text())


async def test_commands_are_counted_by_name_and_outcome_and_tickets_by_work_state(world: World) -> None:
    """An applied publish, claim and delivery, a refused second claim; the ticket shows delivered."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.say("cody", "/claim")
    await world.say("cody", "/deliver branch=agent/12-fix\nDone.")
    text = await scrape(world)
    assert 'railyard_commands_total{command="publish",outcome="applied"} 1.0' in text
    assert 'railyard_commands_total{command="claim",outcome="applied"} 1.0' in text
    assert 'railyard_commands_total{command="deliver",outcome="applied"} 1.0' in text
    claims = [
        line for line in text.splitlines() if line.startswith('railyard_commands_total{command="claim"')
    ]
    [refused] = [line for line in claims if 'outcome="applied"' not in line]
    assert refused.endswith(" 1.0")
    assert 'railyard_tickets{work="delivered"} 1.0' in text
    assert 'railyard_tickets_attention{code="awaiting_review"} 1.0' in text


async def test_an_unknown_command_word_from_a_webhook_never_becomes_a_label(world: World) -> None:
    """Made-up command words and flags: no series names them, and the text barely grows."""
    await world.say("rachel", "/publish")
    before = await scrape(world)
    for n in range(3):
        await world.say("rachel", f"/frobnicate{n} now")
        await world.say("rachel", f"/publish --frob{n}")
    after = await scrape(world)
    assert "frob" not in after
    assert len(after.splitlines()) - len(before.splitlines()) < 5
