"""The rail policy the API judges `blocked_by` under (`app.web.api_policy`): the repository's
configuration as this process read it in the last minute, read again when older or never read,
the last one read (else the defaults) when it cannot be read now; a read never fails for it."""

from __future__ import annotations

import pytest

from app.github.api_errors import GitHubError, GitHubUnavailable
from app.github.config_loader import ConfigLoader, RepoFile
from app.web.api_policy import read_policy
from policies.rails import RailPolicy

REQUIRED_BUILD = RepoFile("blob-1", "checks:\n  required: [build]\n")


class DefaultBranch:
    """acme/web's default branch: its file, or the error GitHub answers; counts the fetches."""

    def __init__(self, file: RepoFile | None = REQUIRED_BUILD, error: Exception | None = None) -> None:
        self.file, self.error, self.fetches = file, error, 0

    async def fetch(self, installation_id: int, repository: str) -> RepoFile | None:
        """The file as GitHub gives it (or its error)."""
        self.fetches += 1
        if self.error is not None:
            raise self.error
        return self.file


async def test_a_recent_configuration_is_used_without_asking_github() -> None:
    """Read in the last minute (by a webhook or a command): the policy comes from it, no fetch."""
    branch = DefaultBranch()
    loader = ConfigLoader(branch.fetch)
    await loader.load(7, "acme/web")
    policy = await read_policy(loader, 7, "acme/web")
    assert policy.required_checks == ("build",) and branch.fetches == 1


async def test_an_unknown_configuration_is_read_once_then_known() -> None:
    """Never read in this process: read now, once; the next read asks GitHub nothing."""
    branch = DefaultBranch()
    loader = ConfigLoader(branch.fetch)
    assert (await read_policy(loader, 7, "acme/web")).required_checks == ("build",)
    assert (await read_policy(loader, 7, "ACME/web")).required_checks == ("build",)
    assert branch.fetches == 1


@pytest.mark.parametrize(
    "error", [GitHubUnavailable("get_file: ConnectError", ambiguous=False), GitHubError(403, "forbidden")]
)
async def test_a_configuration_that_cannot_be_read_gives_the_default_policy(error: Exception) -> None:
    """GitHub down or refusing: the default policy (every check but railyard's counts), no error."""
    loader = ConfigLoader(DefaultBranch(error=error).fetch)
    assert await read_policy(loader, 7, "acme/web") == RailPolicy()


async def test_without_a_loader_the_default_policy_counts() -> None:
    """A process without GitHub credentials reads no configuration: the default policy."""
    assert await read_policy(None, 7, "acme/web") == RailPolicy()


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_a_configuration_older_than_a_minute_is_read_again() -> None:
    """A process that serves only the API sees no push: a change to the file counts within a
    minute, not never (the loader's max_age, as for commands)."""
    branch, clock = DefaultBranch(), Clock()
    loader = ConfigLoader(branch.fetch, clock=clock)
    assert (await read_policy(loader, 7, "acme/web")).required_checks == ("build",)
    branch.file = RepoFile("blob-2", "checks:\n  required: [build, lint]\n")
    clock.now += 30
    assert (await read_policy(loader, 7, "acme/web")).required_checks == ("build",)
    clock.now += 31
    assert (await read_policy(loader, 7, "acme/web")).required_checks == ("build", "lint")
    assert branch.fetches == 2


async def test_a_configuration_that_cannot_be_read_again_keeps_the_last_one_read() -> None:
    """Read before, GitHub down now: the last policy read counts, not the defaults."""
    branch, clock = DefaultBranch(), Clock()
    loader = ConfigLoader(branch.fetch, clock=clock)
    await read_policy(loader, 7, "acme/web")
    branch.error = GitHubUnavailable("get_file: ConnectError", ambiguous=False)
    clock.now += 120
    assert (await read_policy(loader, 7, "acme/web")).required_checks == ("build",)


async def test_a_file_that_cannot_be_read_is_not_asked_for_again_at_every_read() -> None:
    """GitHub failing: the first read asks and falls back to the defaults; reads in the next
    minute ask nothing (each would be a call on the installation's quota, and any account that
    can read a public repository could make them)."""
    branch = DefaultBranch(error=GitHubUnavailable("get_file: ConnectError", ambiguous=False))
    loader = ConfigLoader(branch.fetch)
    for _ in range(5):
        assert await read_policy(loader, 7, "acme/web") == RailPolicy()
    assert branch.fetches == 1
