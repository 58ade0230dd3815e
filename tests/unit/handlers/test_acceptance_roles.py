"""Re-judging an acceptance asks the reviewer's roles under the login the account has now."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from handlers.acceptance import recheck
from handlers.errors import CannotVerify
from policies.states import Role, WorkState
from tests.fakes.github import FakeGitHub
from tests.fakes.ports import FakePorts
from tests.fakes.roles import FakeRoles
from tests.fakes.webhooks import INSTALLATION, REPOSITORY
from tests.unit.handlers.steps import CAROL, KEY, RITA, claimed, say, ticket, world

SHA = "a" * 40
ACCEPTED_AT = datetime(2026, 11, 30, 10, tzinfo=UTC).timestamp()  # the comments' time


@dataclass
class RenamedWhileAsked(FakeGitHub):
    """GitHub where the reviewer renames right after railyard first asks for her login."""

    renamed_to: str = ""

    async def login_of(self, installation_id: int, account_id: int) -> str:
        login = await super().login_of(installation_id, account_id)
        if self.renamed_to and account_id == RITA[1]:
            self.logins[account_id] = self.renamed_to
        return login


async def accepted_by_rita() -> FakePorts:
    """carol delivered #12 at SHA and rita accepted it, an hour ago: nothing has expired."""
    ports = world()
    ports.clock.now = ACCEPTED_AT + 3600
    ports.github.add_branch(REPOSITORY, "agent/12", SHA)
    ports.github.add_commit(REPOSITORY, SHA)
    await claimed(ports)
    await say(ports, "/deliver branch=agent/12 The fix.", by=CAROL)
    await say(ports, "/accept", by=RITA)
    return ports


async def test_a_rename_while_the_roles_are_asked_does_not_lapse_the_acceptance() -> None:
    """rita accepts; while railyard re-judges, she renames to rita2 and her old login loses the team:
    the missing role is confirmed under the login asked again, and the acceptance still holds."""
    ports = await accepted_by_rita()
    assert ticket(ports).work is WorkState.ACCEPTED
    github = RenamedWhileAsked(renamed_to="rita2")
    github.__dict__.update({k: v for k, v in ports.github.__dict__.items() if k != "renamed_to"})
    github.logins[RITA[1]] = "rita"
    ports.github = github
    ports.roles = FakeRoles({"rita2": frozenset({Role.REVIEWER})})
    validity = await recheck(ports.services, INSTALLATION, KEY)
    assert validity is not None and validity.valid
    assert [login for login, _ in ports.roles.asked] == ["rita", "rita2"]


async def test_a_reviewer_who_lost_the_role_under_an_unchanged_login_lapses() -> None:
    """The same account, same login, no longer a reviewer: asked once more for the login, then judged."""
    ports = await accepted_by_rita()
    ports.github.logins[RITA[1]] = "rita"
    ports.roles = FakeRoles({})
    validity = await recheck(ports.services, INSTALLATION, KEY)
    assert validity is not None and not validity.valid
    assert validity.reason is not None and validity.reason.value == "reviewer_lost_role"


async def test_a_reviewer_github_will_not_confirm_leaves_the_acceptance_unverified() -> None:
    """GitHub will not say whether rita still reviews: nothing lapses (nothing was learned), the
    verdict says the roles were not confirmed, and what needs them (`require_roles`) is refused."""
    ports = await accepted_by_rita()
    ports.github.logins[RITA[1]] = "rita"
    ports.roles = FakeRoles({}, unverifiable={"rita"})
    validity = await recheck(ports.services, INSTALLATION, KEY)
    assert validity is not None and validity.valid and validity.unverified and not validity.recorded
    assert ticket(ports).review is not None and ticket(ports).review.invalidated is None
    with pytest.raises(CannotVerify):
        await recheck(ports.services, INSTALLATION, KEY, require_roles=True)
    ports.roles = FakeRoles({"rita": frozenset({Role.REVIEWER})})
    validity = await recheck(ports.services, INSTALLATION, KEY)
    assert validity is not None and validity.valid and not validity.unverified
