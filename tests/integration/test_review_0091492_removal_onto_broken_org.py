"""Review of 0091492: a PR that removes the repository's own `.github/railyard.yml` puts its
organization's file in force once merged (SPEC "Organization config"); when that file cannot
be used by a repository (here: it says `_extends`, which a file others start from may not),
the merge puts defaults and an error in force, every command refused, yet the PR's check has
nothing to say: `ProposedConfigs.problems` answers () whenever the head has no file
(app/github/proposed_config.py:49-50), "the PR removes it" included."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from app.github.client import GitHubClient
from app.github.config_loader import ConfigLoader
from app.github.proposed_config import ProposedConfigs
from app.github.reads import config_fetcher
from app.runtime.metrics import Metrics
from github_standin import StandinState, running_standin
from support.world import FIX, REPO, standin_state
from tests.fakes import app_settings

CONFIG_PATH = ".github/railyard.yml"
ORG_FILE = "_extends: policy\nlimits:\n  commands_per_hour: 3\n"  # fine for acme/.github itself


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


@pytest.mark.xfail(
    strict=True,
    reason="a head without the file (the PR removes it) is never judged: the organization's file "
    "it would put in force is unusable here, and the check passes",
)
async def test_removing_the_own_file_onto_an_unusable_organization_file_is_reported(
    reader: tuple[ProposedConfigs, ConfigLoader, StandinState],
) -> None:
    proposed, loader, state = reader
    state.add_repository("acme/policy", files={CONFIG_PATH: "limits:\n  attempts_per_ticket: 2\n"})
    state.add_repository("acme/.github", files={CONFIG_PATH: ORG_FILE})
    state.repositories[REPO].pulls[34].files[CONFIG_PATH] = None  # PR #34 deletes the file

    # What acme/web would have in force once #34 is merged (no file of its own): unusable.
    after_merge = await loader.layered_on(7, REPO, None)
    assert after_merge.error is not None and "acme/.github" in after_merge.error
    # The file in force today is acme/web's own, and fine.
    assert (await loader.load(7, REPO)).error is None

    assert await proposed.problems(7, REPO, 34, FIX, "main") != ()
