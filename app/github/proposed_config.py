"""The problems of a PR's proposed `.github/railyard.yml`, read from GitHub for its check."""

from __future__ import annotations

from collections import OrderedDict

import structlog

from app.github.client import GitHubClient, GitHubError
from app.github.config import CONFIG_PATH
from app.github.config_loader import ConfigLoader, RepoFile, repo_file, unquoted
from policies.config_layers import own_sha_of

log = structlog.get_logger(__name__)


class ProposedConfigs:
    """The problems of `.github/railyard.yml` as a PR's head has it, when the PR changes the file.

    Asked by the check's renderer, so no handler needs to know. One read per head commit: the
    file at the head (a 404 when the PR removes it or the repository has none), compared by
    blob sha with the default branch's as the configuration in force names it (read within the
    last minute, as every render reads it), and only when it differs, with the file of the
    branch the PR targets as GitHub says it now (a backport into `release` proposes nothing by
    keeping release's file); the same blob is no proposal. Not the PR's list of changed files:
    that is a page per 100 files, up to 30, and anyone may push a wide PR again and again (SPEC
    *Answers that cannot be forged or jammed*). A head whose file differs only because its base's changed
    since it branched is judged too (a file that was in force once: seldom a problem; a rebase
    settles it). The answer is kept in memory per head,
    so re-rendering the check costs nothing. A file that says `_extends` is judged as the server
    would read it once merged: laid over the file it names, read from that repository's default
    branch (the loader's `layered_on`).
    """

    def __init__(self, github: GitHubClient, loader: ConfigLoader, cache_size: int = 1024) -> None:
        """`github` reads the file at a head; `loader` the configuration in force and what a file extends."""
        self._github, self._loader, self._cache_size = github, loader, cache_size
        self._by_head: OrderedDict[str, tuple[str, ...]] = OrderedDict()

    async def problems(
        self, installation: int, repository: str, pull: int, head_sha: str, base_ref: str | None = None
    ) -> tuple[str, ...]:
        """The file's problems at `head_sha` (the server's messages, one a line); () if fine or
        unchanged. `base_ref`: the branch the PR targets as stored (the answer is kept under it;
        GitHub is asked the base whenever it decides the answer)."""
        # The answer is relative to the base: a PR retargeted keeps its head and is judged again.
        key = f"{repository.casefold()}#{pull}@{head_sha}>{base_ref or ''}"
        if key in self._by_head:
            self._by_head.move_to_end(key)
            return self._by_head[key]
        found, keep = await self._read(installation, repository, pull, head_sha, base_ref)
        if not keep:
            return found
        self._by_head[key] = found
        if len(self._by_head) > self._cache_size:
            self._by_head.popitem(last=False)
        return found

    async def _read(
        self, installation: int, repository: str, pull: int, head_sha: str, base_ref: str | None
    ) -> tuple[tuple[str, ...], bool]:
        """The problems, and whether they may be kept for this head and `base_ref`."""
        try:
            proposed = await self._file_at(installation, repository, head_sha)
            if proposed is None:
                return (), True
            # The file in force as last read (within the loader's minute; a push to the default
            # branch forgets it): the same blob is no proposal.
            in_force = await self._loader.load(installation, repository)  # a transient failure is raised
            if own_sha_of(in_force.policy_version) == proposed.sha:
                return (), True
            # Nor is the file of the branch the PR targets (a backport into `release`), as GitHub
            # says it is now: the stored base may be behind a retarget (a same-second pair of
            # them, a resync), and a head passed on a base it no longer has would stay passed.
            base_now = await self._base(installation, repository, pull)
            keep = base_now == base_ref  # else the answer is not the stored base's: asked again
            base = await self._file_at(installation, repository, base_now)
            if base is not None and base.sha == proposed.sha:
                return (), keep
        except GitHubError as error:
            # The PR is gone (a 404), its head is a commit GitHub does not know (a 422), or the app
            # cannot read them: the check is still written, judged on its tickets. Transient
            # failures are raised, and the effect retried.
            if error.status not in (404, 422):
                log.warning(
                    "cannot read the PR's configuration file",
                    repository=repository,
                    pull=pull,
                    status=error.status,
                )
            return (), True
        # What it extends is read like the file in force is: a transient failure is raised.
        loaded = await self._loader.layered_on(installation, repository, proposed)
        return (own_problems(loaded.error.splitlines()) if loaded.error else ()), keep

    async def _file_at(self, installation: int, repository: str, ref: str) -> RepoFile | None:
        """The file at `ref` (None: no file there, a 404)."""
        try:
            found = await self._github.call(
                "get_file", installation, repository=repository, path=CONFIG_PATH, params={"ref": ref}
            )
        except GitHubError as error:
            if error.status == 404:
                return None
            raise
        return repo_file(found)

    async def _base(self, installation: int, repository: str, pull: int) -> str:
        """The branch the PR targets, as GitHub says it now."""
        found = await self._github.call("get_pull", installation, repository=repository, number=pull)
        base = found.get("base") if isinstance(found, dict) else None
        return str(base.get("ref")) if isinstance(base, dict) and base.get("ref") else "HEAD"


def own_problems(problems: list[str]) -> tuple[str, ...]:
    """What a PR's check quotes (`unquoted`: anyone may open a PR)."""
    return tuple(unquoted(problems, "on a pull request"))
