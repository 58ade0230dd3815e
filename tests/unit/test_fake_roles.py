"""The in-memory `Roles` fake answers `listed` as the adapter does: logins, active team members, refusals."""

from __future__ import annotations

import pytest

from handlers.errors import CannotVerify
from handlers.ports import RoleEntry
from tests.fakes.roles import FakeRoles

AGENTS = (RoleEntry(login="Coder-Bot"), RoleEntry(org="acme", slug="agents"))


async def test_the_fake_lists_a_named_login_whatever_its_case() -> None:
    """A login the list names is listed, compared without regard to case."""
    assert await FakeRoles().listed(7, "acme/web", "coder-bot", AGENTS)


async def test_the_fake_lists_the_members_of_a_listed_team_only() -> None:
    """A member of a listed team is listed; a member of another team, or nobody's, is not."""
    roles = FakeRoles(teams={("Acme", "Agents"): {"Agent-Smith"}, ("acme", "people"): {"rita"}})

    assert await roles.listed(7, "acme/web", "agent-smith", AGENTS)
    assert not await roles.listed(7, "acme/web", "rita", AGENTS)
    assert not await roles.listed(7, "acme/web", "agent-smith", ())


async def test_the_fake_cannot_verify_a_team_for_an_unverifiable_login() -> None:
    """An unverifiable account raises `CannotVerify` once a team must be asked, never a silent no."""
    roles = FakeRoles(unverifiable={"rita"})

    with pytest.raises(CannotVerify):
        await roles.listed(7, "acme/web", "rita", AGENTS)
    assert not await roles.listed(7, "acme/web", "rita", (RoleEntry(login="someone"),))
