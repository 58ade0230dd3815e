"""The problems of a PR's proposed `.github/railyard.yml`, read from GitHub for its check."""

from __future__ import annotations

from collections import OrderedDict

import structlog

from app.github.client import GitHubClient, GitHubError
from app.github.config import CONFIG_PATH
from app.github.config_loader import ConfigLoader, RepoFile, repo_file, unquoted
from policies.config_layers import organization_repository, own_sha_of

log = structlog.get_logger(__name__)

FILE_NOT_FOUND = "Not Found"
"""GitHub's 404 for a file a commit does not have; one for a commit it does not know says "No
commit found for the ref ...", and any 404 but this one is not kept for the head."""


class ProposedConfigs:
    """The problems of `.github/railyard.yml` as a PR's head has it, when the PR changes the file.

    Asked by the check's renderer, so no handler needs to know. The file at the head is read
    once per head (a 404 when the PR removes it or the repository has none) and compared by
    blob sha with the default branch's, as the configuration in force names it (read within the
    last minute, as every render reads it). Only when it differs is the PR asked of GitHub for
    its base, and the file there compared too (a backport into `release` proposes nothing by
    keeping release's file): the base is asked each time it decides, never kept, since a PR can
    be retargeted without a push. Never the PR's list of changed files: that is a page per 100
    files, up to 30, and anyone may push a wide PR again and again (SPEC *Answers that cannot be
    forged or jammed*).

    A head whose file differs only because its base's changed since it branched is judged too
    (a file that was in force once: seldom a problem; a rebase settles it). A head without the
    file, into a base that has it, is judged as a removal: by the organization's file it would
    leave in force (a branch made before the file was added included). A file that says
    `_extends` is judged as the server would read it once merged: laid over the file it names,
    read from that repository's default branch (the loader's `layered_on`). A PR to the owner's
    `.github` repository is also judged as the file every repository without one starts from.
    """

    def __init__(self, github: GitHubClient, loader: ConfigLoader, cache_size: int = 1024) -> None:
        """`github` reads the file at a head; `loader` the configuration in force and what a file extends."""
        self._github, self._loader, self._cache_size = github, loader, cache_size
        self._at_head: OrderedDict[str, RepoFile | None] = OrderedDict()
        """The file at each head read (a commit's file never changes; None: it has none)."""

    async def problems(
        self, installation: int, repository: str, pull: int, head_sha: str, base_ref: str | None = None
    ) -> tuple[str, ...]:
        """The file's problems at `head_sha` (the server's messages, one a line); () if fine or
        unchanged. `base_ref`: the branch the PR targets as stored, used only when GitHub will
        not say its base now."""
        try:
            known, proposed = await self._head_file(installation, repository, head_sha)
            if not known:
                return ()
            # The file in force as last read (within the loader's minute; a push to the default
            # branch forgets it): the same blob is no proposal.
            in_force = await self._loader.load(installation, repository)  # a transient failure is raised
            if proposed is None and own_sha_of(in_force.policy_version) is None:
                return ()  # no file at the head, none in force: nothing changes
            if proposed is not None and own_sha_of(in_force.policy_version) == proposed.sha:
                return ()
            # Nor is the file of the branch the PR targets (a backport into `release`), as GitHub
            # says it is now, asked every time it decides: a stored base may be behind a retarget
            # (a same-second pair of them, a resync), and a head passed on a base it no longer has
            # would stay passed. Only when GitHub will not say is the stored base taken.
            base_now = await self._base(installation, repository, pull) or base_ref
            base = await self._file_at(installation, repository, base_now) if base_now else None
            if proposed is None:
                if base is None:
                    return ()  # a branch that never had the file: the PR removes nothing
                # The PR removes the file: what is in force once merged is the organization's
                # file, or the defaults.
                left = await self._loader.layered_on(installation, repository, None)
                return own_problems(left.error.splitlines()) if left.error else ()
            if base is not None and base.sha == proposed.sha:
                return ()
        except GitHubError as error:
            # The head is a commit GitHub does not know (a 422), or the app cannot read it: the
            # check is still written, judged on its tickets. Transient failures are raised, and
            # the effect retried.
            if error.status != 422:
                log.warning(
                    "cannot read the PR's configuration file",
                    repository=repository,
                    pull=pull,
                    status=error.status,
                )
            return ()
        # What it extends is read like the file in force is: a transient failure is raised.
        loaded = await self._loader.layered_on(installation, repository, proposed)
        problems = own_problems(loaded.error.splitlines()) if loaded.error else ()
        if organization_repository(repository) is None:  # the owner's `.github`: others start from it
            problems = (*problems, *self._loader.as_organization_file(proposed))
        return problems

    async def _head_file(
        self, installation: int, repository: str, head_sha: str
    ) -> tuple[bool, RepoFile | None]:
        """Whether GitHub knows the head, and its file there, read once per head. A 404 that says
        GitHub does not know the commit (yet: just after a push) says nothing about the file:
        nothing is judged or kept, the next render reads it again (and the check's own write
        fails on such a head, and is retried)."""
        key = f"{repository.casefold()}@{head_sha}"
        if key in self._at_head:
            self._at_head.move_to_end(key)
            return True, self._at_head[key]
        try:
            found = await self._file_at(installation, repository, head_sha, missing_ok=False)
        except GitHubError as error:
            if error.status != 404:
                raise
            if error.message != FILE_NOT_FOUND:  # "No commit found for the ref ..."
                return False, None
            found = None
        self._at_head[key] = found
        if len(self._at_head) > self._cache_size:
            self._at_head.popitem(last=False)
        return True, found

    async def _file_at(
        self, installation: int, repository: str, ref: str, *, missing_ok: bool = True
    ) -> RepoFile | None:
        """The file at `ref` (None: no file there, a 404, unless not `missing_ok`)."""
        try:
            found = await self._github.call(
                "get_file", installation, repository=repository, path=CONFIG_PATH, params={"ref": ref}
            )
        except GitHubError as error:
            if error.status == 404 and missing_ok:
                return None
            raise
        return repo_file(found)

    async def _base(self, installation: int, repository: str, pull: int) -> str | None:
        """The branch the PR targets, as GitHub says it now (None: it will not say; a transient
        failure is raised)."""
        try:
            found = await self._github.call("get_pull", installation, repository=repository, number=pull)
        except GitHubError as error:
            log.warning("cannot read the PR's base", repository=repository, pull=pull, status=error.status)
            return None
        base = found.get("base") if isinstance(found, dict) else None
        return str(base.get("ref")) if isinstance(base, dict) and base.get("ref") else None


def own_problems(problems: list[str]) -> tuple[str, ...]:
    """What a PR's check quotes (`unquoted`: anyone may open a PR)."""
    return tuple(unquoted(problems, "on a pull request"))
