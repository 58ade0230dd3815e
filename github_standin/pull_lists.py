"""The stand-in's list of a repository's pull requests, and the base branch moving under them.

`GET /repos/{o}/{r}/pulls` answers as GitHub does: `state` (`open` by default, `closed`, `all`),
`base` (a branch name) and `head` (`OWNER:BRANCH`) filters, newest first, paged, and without
the mergeability fields (GitHub's list gives the "simple" pull request, which has none).

GitHub computes mergeability lazily: after the base (or the head) moves, the first
`GET .../pulls/{n}` answers `mergeable: null`, `mergeable_state: "unknown"` and starts the
computation, and later reads answer it. `move_base` is that, for a test: the branch gets a new
head and each open PR into it is computed again, as conflicting when named in `conflicting`.
"""

from __future__ import annotations

from collections.abc import Iterable

from aiohttp import web

from github_standin.common import Json
from github_standin.lookups import STATE, GitHubError, paginate, renderer, repository_of, respond
from github_standin.state import PullRequest, Repository, StandinState

_NOT_LISTED = ("mergeable", "rebaseable", "mergeable_state", "merged", "comments", "commits")
_STATES = {"open": ("open",), "closed": ("closed",), "all": ("open", "closed")}


def _head_matches(repository: Repository, pull: PullRequest, head: str) -> bool:
    owner, _, branch = head.partition(":")
    head_owner = (pull.head_repo or repository.full_name).split("/")[0]
    return branch == pull.head_ref and owner.casefold() == head_owner.casefold()


async def list_pulls(request: web.Request) -> web.Response:
    """The repository's pull requests, filtered by `state`, `base` and `head`, newest first."""
    repository = repository_of(request)
    states = _STATES.get(request.query.get("state", "open"), ("open",))
    base, head = request.query.get("base"), request.query.get("head")
    chosen = [
        pull
        for pull in sorted(repository.pulls.values(), key=lambda p: -p.number)
        if pull.state in states
        and (base is None or pull.base_ref == base)
        and (head is None or _head_matches(repository, pull, head))
    ]
    shapes = [listed(renderer(request).pull(repository, pull)) for pull in chosen]
    page, headers = paginate(request, shapes)
    return respond(page, headers=headers)


def listed(shape: Json) -> Json:
    """A pull request as GitHub's list gives it: without the fields only a single read computes."""
    return {key: value for key, value in shape.items() if key not in _NOT_LISTED}


def as_read(pull: PullRequest, shape: Json) -> Json:
    """One read of the PR: while GitHub is computing its mergeability, `null` (and the read
    starts the computation, so the next read has the answer)."""
    if not pull.computing:
        return shape
    pull.computing = False
    return {**shape, "mergeable": None, "rebaseable": None, "mergeable_state": "unknown"}


def move_base(
    state: StandinState, repo: str, branch: str, sha: str, *, conflicting: Iterable[int] = ()
) -> list[int]:
    """Push `sha` to `branch`: each open PR into it is computed again (null at the first read),
    conflicting (`mergeable: false`, `dirty`) when its number is in `conflicting`. Returns them."""
    repository = state.repositories[repo]
    repository.branches[branch] = sha
    conflicts = set(conflicting)
    moved = []
    for pull in repository.pulls.values():
        if pull.state == "open" and pull.base_ref == branch:
            pull.mergeable, pull.computing = pull.number not in conflicts, True
            moved.append(pull.number)
    return sorted(moved)


async def list_commit_pulls(request: web.Request) -> web.Response:
    """`GET /repos/{o}/{r}/commits/{sha}/pulls`, as GitHub lists them: for a commit on the default
    branch, the merged pull requests that brought it (its merge commit, or its head); for one that
    is not, only the open pull requests whose head it is; 422 for a commit the repository does not
    have. A commit deeper in a PR's branch than its head is listed with no pull request here,
    where GitHub would name the PR: never kinder."""
    repository, ref = repository_of(request), request.match_info["ref"].lower()
    name = repository.full_name.casefold()
    walked = {sha for (repo, sha) in request.app[STATE].history.parents if repo == name}
    heads = {p.head_sha for p in repository.pulls.values() if p.head_sha}
    merges = {p.merge_commit_sha for p in repository.pulls.values() if p.merge_commit_sha}
    if ref not in {*repository.branches.values(), *repository.commits, *walked, *heads, *merges}:
        raise GitHubError(422, f"No commit found for SHA: {ref}")
    default_head = repository.branches.get(repository.default_branch)
    history = request.app[STATE].history
    on_default = default_head is not None and ref in history.ancestors(name, default_head)
    chosen = [
        pull
        for pull in sorted(repository.pulls.values(), key=lambda p: -p.number)
        if (on_default and pull.merged and ref in (pull.merge_commit_sha, pull.head_sha))
        or (not on_default and pull.state == "open" and pull.head_sha == ref)
    ]
    shapes = [listed(renderer(request).pull(repository, pull)) for pull in chosen]
    page, headers = paginate(request, shapes)
    return respond(page, headers=headers)
