"""Organization defaults read through the real GitHub client from the stand-in: the owner's
`.github` repository answers the contents API as github.com does (404 for a missing repository
or file, base64 content, the blob sha), and the loader puts what it finds in force."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from app.github.client import GitHubClient
from app.github.config_loader import ConfigLoader
from app.github.reads import config_fetcher
from app.runtime.metrics import Metrics
from github_standin import StandinState, git_blob_sha, running_standin
from support.world import REPO, standin_state
from tests.fakes import app_settings

CONFIG_PATH = ".github/railyard.yml"
ORG_FILE = "limits:\n  commands_per_hour: 3\n"


@pytest.fixture
async def loader() -> AsyncIterator[tuple[ConfigLoader, StandinState]]:
    """A loader over a client talking to the e2e stand-in state, where acme/web has no file."""
    state = standin_state()
    del state.repositories[REPO].files[CONFIG_PATH]
    async with running_standin(state) as standin:
        github = GitHubClient(app_settings("sqlite://", GITHUB_API_URL=standin.url), Metrics())
        await github.start()
        try:
            yield ConfigLoader(config_fetcher(github)), state
        finally:
            await github.close()


async def test_the_organizations_file_is_read_from_the_dot_github_repository(
    loader: tuple[ConfigLoader, StandinState],
) -> None:
    """acme/web without a file: acme/.github's default branch file, its blob sha in the version."""
    configs, state = loader
    state.add_repository("acme/.github", files={CONFIG_PATH: ORG_FILE})

    loaded = await configs.load(7, REPO, fresh=True)

    assert loaded.config.limits.commands_per_hour == 3
    assert loaded.policy_version == f".github@{git_blob_sha(ORG_FILE)}"


async def test_a_missing_dot_github_repository_means_the_defaults(
    loader: tuple[ConfigLoader, StandinState],
) -> None:
    """GitHub's 404 for acme/.github is no error: the defaults hold."""
    configs, state = loader

    loaded = await configs.load(7, REPO, fresh=True)

    assert (loaded.policy_version, loaded.error) == ("default", None)
    assert [call.status for call in state.calls_to("GET", f"/repos/acme/.github/contents/{CONFIG_PATH}")] == [
        404
    ]


async def test_a_dot_github_repository_without_the_file_means_the_defaults(
    loader: tuple[ConfigLoader, StandinState],
) -> None:
    """acme/.github exists but holds no `.github/railyard.yml`: the defaults."""
    configs, state = loader
    state.add_repository("acme/.github", files={"profile/README.md": "Hello\n"})

    assert (await configs.load(7, REPO, fresh=True)).policy_version == "default"


BIG = "roles:\n  reviewer: ['@acme/reviewers']\n" + "# a long comment line to pad the file\n" * 30_000
"""A file past 1 MB: the contents API answers it with `"encoding": "none"` and no content."""


@pytest.mark.parametrize("where", ["own", "organization", "extended"])
async def test_a_file_past_one_megabyte_is_a_problem_never_an_empty_file(
    loader: tuple[ConfigLoader, StandinState], where: str
) -> None:
    """GitHub gives a file over 1 MB without its text. Read as empty, it would put the defaults
    in force unannounced (every writer a reviewer); it is the configuration's problem instead,
    wherever the file is: the repository's own, its organization's, or the one it extends."""
    configs, state = loader
    assert len(BIG.encode()) > 1024 * 1024
    if where == "own":
        state.repositories[REPO].files[CONFIG_PATH] = BIG
    elif where == "organization":
        state.add_repository("acme/.github", files={CONFIG_PATH: BIG})
    else:
        state.repositories[REPO].files[CONFIG_PATH] = "_extends: .github\n"
        state.add_repository("acme/.github", files={CONFIG_PATH: BIG})

    loaded = await configs.load(7, REPO, fresh=True)

    assert loaded.error is not None and "larger than 1 MB" in loaded.error, loaded
