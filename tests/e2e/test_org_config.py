"""Organization defaults through the real server (SPEC: "Organization defaults and GitHub's own
views"): acme/web's rules come from acme/.github's `.github/railyard.yml` when it has no file,
and from both when its file says `_extends`. On SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from app.store.database import Database
from app.store.tickets import TicketService
from github_standin import git_blob_sha, running_standin
from policies.model import TicketKey
from support.world import CONFIG, REPO, World, standin_state
from tests.fakes import app_settings, running_server

CONFIG_PATH = ".github/railyard.yml"


@pytest.fixture
async def org_world(database: Database) -> AsyncIterator[World]:
    """The e2e world on either database, acme/web without a file of its own yet."""
    state = standin_state()
    del state.repositories[REPO].files[CONFIG_PATH]
    async with running_standin(state) as standin:
        settings = app_settings(database.url, GITHUB_API_URL=standin.url, APP_ID="1")
        async with running_server(settings) as server:
            yield World(server, state, database)


def versions(world: World, number: int = 12) -> set[str]:
    """The policy versions the ticket's events were recorded under."""
    history = TicketService(world.database).history(TicketKey(REPO, number))
    return {recorded.event.policy_version for recorded in history}


async def test_a_repository_without_a_file_follows_its_organizations_file(org_world: World) -> None:
    """acme/.github says who holds the roles and `commands_per_hour: 2`: rachel's third command
    in acme/web is refused at 2, and the events name acme/.github's blob."""
    organization = CONFIG + "limits:\n  commands_per_hour: 2\n"
    org_world.github.add_repository("acme/.github", files={CONFIG_PATH: organization})

    await org_world.say("rachel", "/draft")
    await org_world.say("rachel", "/publish")
    await org_world.say("rachel", "/draft", number=13)

    assert org_world.ticket().work.value == "open"
    assert org_world.ticket(13) is None
    assert "limit is 2" in org_world.replies(13)[-1]
    assert versions(org_world) == {f".github@{git_blob_sha(organization)}"}


async def test_a_file_that_extends_the_organizations_overrides_one_key(org_world: World) -> None:
    """acme/web's file says `_extends: .github` and `commands_per_hour: 2`; the roles come from
    acme/.github (whose own limit is 30): the third command is refused at 2."""
    own = "_extends: .github\nlimits:\n  commands_per_hour: 2\n"
    org_world.github.add_repository("acme/.github", files={CONFIG_PATH: CONFIG})
    org_world.github.repositories[REPO].files[CONFIG_PATH] = own

    await org_world.say("rachel", "/draft")
    await org_world.say("rachel", "/publish")
    await org_world.say("rachel", "/draft", number=13)

    assert org_world.ticket().work.value == "open"  # rachel is a requester by acme/.github's roles
    assert "limit is 2" in org_world.replies(13)[-1]
    assert versions(org_world) == {f"{git_blob_sha(own)}+.github@{git_blob_sha(CONFIG)}"}


@pytest.mark.parametrize("own", ["_extends: payroll\n", None])
async def test_a_refusal_never_quotes_another_repositorys_file(org_world: World, own: str | None) -> None:
    """acme/web (public) starts from a private repository's file (acme/payroll by `_extends`, or
    acme/.github as its organization's) whose problem quotes its own words. Anyone may comment on
    acme/web: the refusal names that repository and counts its problems, never quotes them."""
    secret = "ceo salary is 412000"
    base = "acme/payroll" if own else "acme/.github"
    broken = f"roles:\n  reviewer: ['{secret}']\n"
    org_world.github.add_repository(base, files={CONFIG_PATH: broken}, private=True)
    if own:
        org_world.github.repositories[REPO].files[CONFIG_PATH] = own

    await org_world.say("rachel", "/draft")

    [refusal] = org_world.replies()
    assert "412000" not in refusal and f"the file of {base}" in refusal and "1 problem(s) there" in refusal
    assert org_world.ticket() is None
