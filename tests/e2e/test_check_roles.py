"""The roles the `railyard` check asks, end to end: one confirmed role is enough to judge an
override whatever GitHub will not say about another team, and a role taken from a runner shows
on the next push of an unlinked PR."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from github_standin import Fault
from policies.events import EventType
from support.world import CONFIG, FIX, pull_request_payload
from tests.e2e.test_acceptance import AMENDED, Setup, _world, check, delivered, events


@pytest.fixture
async def plain(tmp_path: Path) -> AsyncIterator[Setup]:
    """acme/web as tests/e2e/test_acceptance.py sets it up: cody in @acme/agents and @acme/reviewers."""
    async for setup in _world(tmp_path, CONFIG):
        yield setup


async def test_an_override_by_a_confirmed_maintainer_is_not_unverified_for_another_roles_team(
    plain: Setup,
) -> None:
    """max (an active member of @acme/maintainers, readable) overrides. Later GitHub answers 403
    for @acme/release's memberships (a team railyard may not read, e.g. a secret team of
    another org or a permission narrowed to some teams). max still verifiably holds
    repository_maintainer, which is all an override needs: the check on an amended head (same
    tree) must pass. Since Validity.unverified it is `action_required` "cannot be verified"."""
    world, _ = plain
    await delivered(world)
    await world.say("max", "/accept --override Hotfix verified in staging")
    assert check(world, FIX)[0] == "success"
    world.github.inject("GET", r"/orgs/acme/teams/release/memberships/", *[Fault(status=403)] * 50)
    await world.send(
        "pull_request",
        pull_request_payload("synchronize", 34, "Fixes #12", head=AMENDED, updated="2026-11-30T10:00:05Z"),
    )
    await world.settle()
    assert not events(world, EventType.ACCEPTANCE_INVALIDATED)
    assert check(world, AMENDED)[0] == "success", check(world, AMENDED)


async def test_a_push_after_the_author_is_left_only_a_runner_gets_link_the_ticket(plain: Setup) -> None:
    """cody is in @acme/agents (runner) and @acme/reviewers: his PR that links no ticket gets
    `checks.unlinked` (success). A maintainer removes him from @acme/reviewers, leaving him only a
    runner; he pushes again a minute later. The check on the new head must say `link the ticket`
    (SPEC: PRs opened by an account holding only the runner role); it is `success`, the answer
    kept from the first head, although a new head is a fresh computation."""
    world, _ = plain
    opened = pull_request_payload("opened", 61, "Some work", head="7" * 40, ref="agent/x")
    opened["pull_request"]["user"]["login"] = "cody"
    await world.send("pull_request", opened)
    await world.settle()
    assert check(world, "7" * 40) == ("success", "no linked ticket")
    del world.github.team_memberships[("acme", "reviewers", "cody")]
    pushed = pull_request_payload(
        "synchronize", 61, "Some work", head="8" * 40, ref="agent/x", updated="2026-11-30T10:01:00Z"
    )
    pushed["pull_request"]["user"]["login"] = "cody"
    await world.send("pull_request", pushed)
    await world.settle()
    assert check(world, "8" * 40) == ("action_required", "link the ticket")
