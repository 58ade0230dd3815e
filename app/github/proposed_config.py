"""The problems of a PR's proposed `.github/railyard.yml`, read from GitHub for its check."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import structlog

from app.github.client import GitHubClient, GitHubError
from app.github.config import CONFIG_PATH
from app.github.config_loader import ConfigLoader, repo_file, unquoted

log = structlog.get_logger(__name__)


class ProposedConfigs:
    """The problems of `.github/railyard.yml` as a PR's head has it, when the PR changes the file.

    Asked by the check's renderer, so no handler needs to know: one `pulls/{n}/files` read per
    head commit (more pages only past 100 changed files), and the file itself only when the PR
    changes it; the answer is kept in memory per head, so re-rendering the check costs nothing.
    A file that says `_extends` is judged as the server would read it once merged: laid over the
    file it names, read from that repository's default branch (the loader's `layered_on`).
    """

    MAX_PAGES = 30  # GitHub lists at most 3,000 files of a PR

    def __init__(self, github: GitHubClient, loader: ConfigLoader, cache_size: int = 1024) -> None:
        """`github` reads the PR's files and the file at its head; `loader` what it extends."""
        self._github, self._loader, self._cache_size = github, loader, cache_size
        self._by_head: OrderedDict[str, tuple[str, ...]] = OrderedDict()

    async def problems(self, installation: int, repository: str, pull: int, head_sha: str) -> tuple[str, ...]:
        """The file's problems at `head_sha` (the server's messages, one a line); () if fine or unchanged."""
        key = f"{repository.casefold()}#{pull}@{head_sha}"
        if key in self._by_head:
            self._by_head.move_to_end(key)
            return self._by_head[key]
        found = await self._read(installation, repository, pull, head_sha)
        self._by_head[key] = found
        if len(self._by_head) > self._cache_size:
            self._by_head.popitem(last=False)
        return found

    async def _read(self, installation: int, repository: str, pull: int, head_sha: str) -> tuple[str, ...]:
        try:
            if not await self._changes_config(installation, repository, pull):
                return ()
            found = await self._github.call(
                "get_file", installation, repository=repository, path=CONFIG_PATH, params={"ref": head_sha}
            )
        except GitHubError as error:
            # The PR or its head is gone (404, 422), or the app cannot read it: the check is still
            # written, judged on its tickets. Transient failures are raised, and the effect retried.
            if error.status not in (404, 422):
                log.warning(
                    "cannot read the PR's configuration file",
                    repository=repository,
                    pull=pull,
                    status=error.status,
                )
            return ()
        proposed = repo_file(found)
        if proposed is None:
            return ()
        # What it extends is read like the file in force is: a transient failure is raised.
        loaded = await self._loader.layered_on(installation, repository, proposed)
        return own_problems(loaded.error.splitlines()) if loaded.error else ()

    async def _changes_config(self, installation: int, repository: str, pull: int) -> bool:
        """Whether the PR adds or modifies the file (a PR that removes it leaves the organization's
        file in force, or the defaults: both are judged where they live)."""
        params: Mapping[str, Any] | None = {"per_page": 100}
        for _ in range(self.MAX_PAGES):
            page, params = await self._github.call_page(
                "list_pull_files", installation, params=params, repository=repository, number=pull
            )
            for item in page if isinstance(page, list) else []:
                if (
                    isinstance(item, dict)
                    and item.get("filename") == CONFIG_PATH
                    and item.get("status") != "removed"
                ):
                    return True
            if params is None:
                return False
        return False


def own_problems(problems: list[str]) -> tuple[str, ...]:
    """What a PR's check quotes (`unquoted`: anyone may open a PR)."""
    return tuple(unquoted(problems, "on a pull request"))
