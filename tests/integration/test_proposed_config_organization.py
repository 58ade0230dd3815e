"""The `railyard` check's judge of the `.github/railyard.yml` a PR would put in force once merged,
where other repositories are concerned (SPEC *Configuration tools*, *Organization defaults*): a
PR to the owner's `.github` repository is judged as the file every repository without one starts
from, and a PR into a branch that never had the file removes nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from app.github.client import GitHubClient
from app.github.config_loader import ConfigLoader
from app.github.proposed_config import ProposedConfigs
from app.github.reads import config_fetcher
from app.runtime.metrics import Metrics
from github_standin import StandinState, running_standin
from support.world import CONFIG, REPO, standin_state
from tests.fakes import app_settings
from tests.integration.test_proposed_config import BACKPORT, backport_into_release

CONFIG_PATH = ".github/railyard.yml"
ORG = "acme/.github"
POLICY_FILE = "limits:\n  attempts_per_ticket: 2\n"
EXTENDING = "_extends: policy\nlimits:\n  commands_per_hour: 3\n"  # fine in acme/.github itself


@pytest.fixture
async def reader() -> AsyncIterator[tuple[ProposedConfigs, ConfigLoader, StandinState]]:
    state = standin_state()
    async with running_standin(state) as standin:
        github = GitHubClient(app_settings("sqlite://", GITHUB_API_URL=standin.url), Metrics())
        await github.start()
        try:
            loader = ConfigLoader(config_fetcher(github))
            yield ProposedConfigs(github, loader), loader, state
        finally:
            await github.close()


async def test_an_organization_file_that_every_repository_without_one_cannot_use_is_reported(
    reader: tuple[ProposedConfigs, ConfigLoader, StandinState],
) -> None:
    """acme/.github's file is fine; PR #5 there makes it say `_extends: policy`. Once merged,
    acme/site (no file of its own) has the defaults and an error naming acme/.github."""
    proposed, loader, state = reader
    state.add_repository("acme/policy", files={CONFIG_PATH: POLICY_FILE})
    org = state.add_repository(ORG, files={CONFIG_PATH: CONFIG})
    state.add_repository("acme/site", files={})
    head = "5" * 40
    state.add_pull(ORG, 5, head_ref="tighten", head_sha=head, files={CONFIG_PATH: EXTENDING})

    # Today acme/site runs on acme/.github's file, without a problem.
    assert (await loader.load(7, "acme/site")).error is None
    # What #5 puts in force once merged: fine for acme/.github itself, unusable for acme/site.
    merged = org.files | {CONFIG_PATH: EXTENDING}
    org.files = merged
    assert (await loader.load(7, ORG, fresh=True)).error is None
    after = await loader.load(7, "acme/site", fresh=True)
    assert after.error is not None and after.error.startswith(f"{ORG}: line 1: _extends: not followed")
    org.files = {CONFIG_PATH: CONFIG}  # back to before the merge
    loader.forget(ORG)

    [problem] = await proposed.problems(7, ORG, 5, head, "main")
    assert problem.startswith("line 1: _extends: not followed: a file other repositories start from")


async def test_a_backport_into_a_branch_without_the_file_removes_nothing(
    reader: tuple[ProposedConfigs, ConfigLoader, StandinState],
) -> None:
    """acme/web has its own file (fine); acme/.github's says `_extends` (unusable as an
    organization's file: acme/web does not use it). `release` was cut before acme/web had a file;
    PR #36 backports a fix into `release` and does not touch `.github/railyard.yml`."""
    proposed, loader, state = reader
    state.add_repository("acme/policy", files={CONFIG_PATH: POLICY_FILE})
    state.add_repository(ORG, files={CONFIG_PATH: EXTENDING})
    backport_into_release(state, None)
    assert CONFIG_PATH not in (state.repositories[REPO].files_at("release") or {"-": ""})
    assert (await loader.load(7, REPO)).error is None  # acme/web's own file, in force, fine

    assert await proposed.problems(7, REPO, 36, BACKPORT, "release") == ()
