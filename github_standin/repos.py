"""The GitHub stand-in's repository endpoints: the repository, its files, branches, commits, pull
requests and comparisons."""

from __future__ import annotations

from aiohttp import web

from github_standin.lookups import (
    INSTALLATION,
    STATE,
    GitHubError,
    installation_of,
    moved_away,
    not_found,
    paginate,
    renderer,
    repository_of,
    respond,
)
from github_standin.oauth import permissions_of, user_login
from github_standin.pull_lists import as_read
from github_standin.state import Repository


async def get_content(request: web.Request) -> web.Response:
    """A file on the default branch; ?ref may name it, its head sha, or a PR's head (sha or branch)."""
    repository, ref = repository_of(request), request.query.get("ref", "")
    if (files := repository.files_at(ref)) is None:
        raise not_found(f"No commit found for the ref {ref}")
    if (path := request.match_info["path"].strip("/")) not in files:
        raise not_found()
    return respond(
        renderer(request).content_file(repository, path, ref or repository.default_branch, files[path])
    )


async def get_repo(request: web.Request) -> web.Response:
    """The repository: to an installation that covers it, or to a person who can read it (with
    their `permissions`; a private repository they cannot read is 404, as GitHub hides it)."""
    if request[INSTALLATION] is not None:
        return respond(renderer(request).repository(repository_of(request)))
    state, login = request.app[STATE], user_login(request)
    repository = state.repository(f"{request.match_info['owner']}/{request.match_info['repo']}")
    if repository is None:
        raise moved_away(request) or not_found()
    role = state.permissions.get((repository.full_name, login), "none")
    if repository.private and role == "none":
        raise not_found()
    return respond(renderer(request).repository(repository) | permissions_of(role))


async def get_repo_by_id(request: web.Request) -> web.Response:
    """GET /repositories/{id}: the repository whatever its name now (where a 301 points), to an
    installation of its owner or a person who can read it."""
    state = request.app[STATE]
    repository = state.repository_by_id(int(request.match_info["repository_id"]))
    if repository is None:
        raise not_found()
    if request[INSTALLATION] is not None:
        if installation_of(request).account.lower() != repository.full_name.split("/")[0].lower():
            raise not_found()
        return respond(renderer(request).repository(repository))
    role = state.permissions.get((repository.full_name, user_login(request)), "none")
    if repository.private and role == "none":
        raise not_found()
    return respond(renderer(request).repository(repository) | permissions_of(role))


async def get_branch(request: web.Request) -> web.Response:
    repository, name = repository_of(request), request.match_info["branch"]
    if name not in repository.branches:
        raise not_found("Branch not found")
    return respond(renderer(request).branch(repository, name))


async def get_commit(request: web.Request) -> web.Response:
    """A commit named by a branch, or by a full or abbreviated sha of a branch or PR head."""
    repository, ref = repository_of(request), request.match_info["ref"]
    heads = (p.head_sha for p in repository.pulls.values() if p.head_sha)
    walked = (
        sha for (repo, sha) in request.app[STATE].history.parents if repo == repository.full_name.casefold()
    )
    known = {*repository.branches.values(), *heads, *repository.commits, *walked}
    sha = repository.branches.get(ref) or next(
        (s for s in known if len(ref) >= 7 and s.startswith(ref.lower())), None
    )
    if sha is None:
        raise GitHubError(422, f"No commit found for SHA: {ref}")
    return respond(renderer(request).commit(repository.full_name, sha))


async def get_pull(request: web.Request) -> web.Response:
    repository = repository_of(request)
    if (pull := repository.pulls.get(int(request.match_info["number"]))) is None:
        raise not_found()
    return respond(as_read(pull, renderer(request).pull(repository, pull)))


async def compare(request: web.Request) -> web.Response:
    """base...head: walked through the commit graph when it holds both commits (the commits head
    has and base does not, oldest first: 250 at most unpaged, else a page of them with a Link
    header); otherwise the seeded status (identical when both name one commit); else 404."""
    repository = repository_of(request)
    base, _, head = request.match_info["basehead"].partition("...")
    base_sha, head_sha = repository.resolve(base), repository.resolve(head)
    history = request.app[STATE].history
    known = [bool(sha and history.knows(repository.full_name, sha)) for sha in (base_sha, head_sha)]
    if all(known):
        return _walked(request, repository, base, head)
    same = "identical" if base_sha and base_sha == head_sha else None
    if base_sha is None or head_sha is None or (status := repository.compare.get((base, head), same)) is None:
        raise not_found()
    return respond(renderer(request).comparison(repository, base, head, status))


def _walked(request: web.Request, repository: Repository, base: str, head: str) -> web.Response:
    """A comparison from the commit graph, in GitHub's shape and paging."""
    base_sha, head_sha = repository.resolve(base) or base, repository.resolve(head) or head
    status, ahead, behind_by, merge_base = request.app[STATE].history.compare(
        repository.full_name, base_sha, head_sha
    )
    render = renderer(request)
    shape = render.comparison(repository, base, head, status)
    if "per_page" in request.query or "page" in request.query:
        listed, headers = paginate(request, ahead)
    else:
        listed, headers = ahead[-250:], {}
    shape |= {
        "ahead_by": len(ahead),
        "behind_by": behind_by,
        "total_commits": len(ahead),
        "merge_base_commit": render.commit(repository.full_name, merge_base or base_sha),
        "commits": [render.commit(repository.full_name, sha) for sha in listed],
    }
    return respond(shape, headers=headers)


async def list_pull_files(request: web.Request) -> web.Response:
    """The files a PR changes, in GitHub's shape, paged (?per_page up to 100, 30 by default)."""
    repository = repository_of(request)
    if (pull := repository.pulls.get(int(request.match_info["number"]))) is None:
        raise not_found()
    listed = [renderer(request).pull_file(repository, pull, path) for path in sorted(pull.files)]
    page, headers = paginate(request, listed)
    return respond(page, headers=headers)
