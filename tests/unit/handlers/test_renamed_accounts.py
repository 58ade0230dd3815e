"""A claimant unassigned or told by the account, not by the login recorded at the claim (SPEC
*Identity*: logins can be renamed and registered again by someone else).

carol claims #12, then renames her account to carol2; someone else may register `carol` since."""

from __future__ import annotations

import pytest

from handlers.answers import ReopenedNotice, SentBackNotice, Unassign
from tests.unit.handlers.steps import (
    CAROL,
    NORA,
    RACHEL,
    REPOSITORY,
    RITA,
    answers_after,
    claimed,
    say,
    ticket,
    world,
)

SHA = "a" * 40


async def test_a_reopen_unassigns_and_tells_the_claimants_account_under_its_login_now() -> None:
    ports = world()
    await claimed(ports)
    ports.github.logins[CAROL[1]] = "carol2"
    before = len(ports.store.answers)
    await say(ports, "/reopen The work moved elsewhere.", by=RACHEL)
    written = answers_after(ports, before)
    assert [a.logins for a in written if isinstance(a, Unassign)] == [("carol2",)]
    assert [a.claimant for a in written if isinstance(a, ReopenedNotice)] == ["carol2"]


async def test_a_reopen_unassigns_no_one_when_the_claimants_account_is_gone() -> None:
    """Its old login may be another person's now: neither unassigned nor mentioned."""
    ports = world()
    await claimed(ports)
    del ports.github.logins[CAROL[1]]
    before = len(ports.store.answers)
    await say(ports, "/reopen The work moved elsewhere.", by=RACHEL)
    written = answers_after(ports, before)
    assert ticket(ports).claimant is None  # reopened all the same
    assert not [a for a in written if isinstance(a, Unassign | ReopenedNotice)]


async def test_a_send_back_tells_the_runner_under_the_login_they_have_now() -> None:
    ports = world()
    ports.github.add_branch(REPOSITORY, "agent/12", SHA)
    ports.github.add_commit(REPOSITORY, SHA)
    await claimed(ports)
    await say(ports, "/deliver branch=agent/12 The fix.", by=CAROL)
    ports.github.logins[CAROL[1]] = "carol2"
    before = len(ports.store.answers)
    await say(ports, "/send-back Cover the retry path too.", by=RITA)
    told = [a for a in answers_after(ports, before) if isinstance(a, SentBackNotice)]
    assert [notice.runner for notice in told] == ["carol2"]


@pytest.mark.parametrize("words", ["/reopen Mine now.", "/send-back Nope."])
async def test_a_role_less_reopen_or_send_back_asks_github_for_no_login(words: str) -> None:
    """An outsider costs no reads (found in review): the claimant's login is asked only for an
    author holding a role."""
    ports = world()
    await claimed(ports)
    before = len(ports.github.calls)
    for _ in range(3):
        await say(ports, words, by=NORA)
    assert ticket(ports).claimant is not None  # refused
    assert "login_of" not in [call.method for call in ports.github.calls[before:]]
