"""What every endpoint of the GitHub stand-in uses: errors in GitHub's shape, paging, the
request's state and body, and looking up the path's repository, issue or comment as GitHub does."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from github_standin.common import DOCS, Json
from github_standin.render import Render
from github_standin.state import Comment, Installation, Issue, Repository, StandinState


class GitHubError(Exception):
    """An error answer in GitHub's shape: message, documentation_url, status (and errors)."""

    def __init__(
        self, status: int, message: str, docs: str = DOCS, headers: dict[str, str] | None = None, **extra: Any
    ) -> None:
        super().__init__(message)
        self.status, self.body = status, {"message": message, "documentation_url": docs, **extra}
        self.headers = headers or {}

    def response(self) -> web.Response:
        body = {**self.body, "status": str(self.status)}
        return web.json_response(body, status=self.status, headers=self.headers)


def not_found(message: str = "Not Found") -> GitHubError:
    return GitHubError(404, message)


def invalid(resource: str, field_name: str, code: str = "missing_field") -> GitHubError:
    return GitHubError(
        422, "Validation Failed", errors=[{"resource": resource, "code": code, "field": field_name}]
    )


def respond(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response(body, status=status, headers=headers)


def paginate(request: web.Request, items: list[Any]) -> tuple[list[Any], dict[str, str]]:
    """One page of `items` per ?per_page and ?page, and GitHub's Link header for the others."""
    per_page = min(int(request.query.get("per_page", 30)), 100)
    page = max(int(request.query.get("page", 1)), 1)
    last = max(1, -(-len(items) // per_page))
    rels = [("next", page + 1), ("last", last)] if page < last else []
    rels += [("prev", page - 1), ("first", 1)] if page > 1 else []
    links = ", ".join(f'<{request.url.update_query(page=n)}>; rel="{rel}"' for rel, n in rels)
    return items[(page - 1) * per_page : page * per_page], {"Link": links} if links else {}


STATE = web.AppKey("state", StandinState)
BODY = web.RequestKey[Json | None]("body")  # the JSON object sent ({} if none); None if not an object
INSTALLATION = web.RequestKey[int | None]("installation")  # the caller's installation, if a token
USER = web.RequestKey[str | None]("user")  # the caller's login, for a user's token


def renderer(request: web.Request) -> Render:
    return Render(request.app[STATE], f"{request.scheme}://{request.host}")


def installation_of(request: web.Request) -> Installation:
    installation_id = request[INSTALLATION]
    assert installation_id is not None, "the route needs an installation token"
    return request.app[STATE].installations[installation_id]


def repository_of(request: web.Request) -> Repository:
    """The path's repository, if the caller can see it (404 otherwise, as GitHub): an installation
    its account's repositories, a person the public ones and the private ones they hold a permission on."""
    owner = request.match_info["owner"]
    repository = request.app[STATE].repository(f"{owner}/{request.match_info['repo']}")
    if repository is None:
        raise moved_away(request) or not_found()
    if (user := request.get(USER)) is not None:  # a person: what they can read, as GitHub shows it
        if (
            repository.private
            and request.app[STATE].permissions.get((repository.full_name, user), "none") == "none"
        ):
            raise not_found()
        return repository
    if installation_of(request).account.lower() != owner.lower():
        raise not_found()
    return repository


def _moved(request: web.Request, repository: Repository, number: int) -> GitHubError:
    """GitHub's answer at a transferred issue's old address: 301, the new address in Location
    and in the body's `url` (the same path under /repositories/{id}/issues/{number})."""
    target_id, new_number = repository.transferred[number]
    rest = request.path.split(f"/issues/{number}", 1)[1] if f"/issues/{number}" in request.path else ""
    url = f"{renderer(request).api}/repositories/{target_id}/issues/{new_number}{rest}"
    docs = "https://docs.github.com/rest/guides/best-practices-for-using-the-rest-api#follow-redirects"
    return GitHubError(301, "Moved Permanently", docs, headers={"Location": url}, url=url)


def issue_of(repository: Repository, number: int, request: web.Request | None = None) -> Issue:
    """An issue, or the issue side of a pull request (every pull request is an issue); a
    transferred issue answers 301 (when the request is given)."""
    if request is not None and number in repository.transferred:
        raise _moved(request, repository, number)
    if number not in repository.issues and number in repository.pulls:
        pull = repository.pulls[number]
        repository.issues[number] = Issue(number, pull.title, pull.body, state=pull.state, user=pull.user)
    if number not in repository.issues:
        raise not_found()
    return repository.issues[number]


def comment_of(request: web.Request) -> Comment:
    repository = repository_of(request)
    comment = request.app[STATE].comments.get(int(request.match_info["comment_id"]))
    if comment is None or comment.repo != repository.full_name:
        raise not_found()
    return comment


def moved_away(request: web.Request) -> GitHubError | None:
    """GitHub's answer at a renamed or transferred repository's old name: 301 to the same path
    under `/repositories/{id}` (Location and the body's `url`), while no repository has the name."""
    state = request.app[STATE]
    old = f"{request.match_info['owner']}/{request.match_info['repo']}"
    moved_to = state.moved.get(old.casefold())
    if moved_to is None or state.repository_by_id(moved_to) is None:
        return None
    rest = request.path[len(f"/repos/{old}") :] if request.path.startswith(f"/repos/{old}") else ""
    url = f"{renderer(request).api}/repositories/{moved_to}{rest}"
    docs = "https://docs.github.com/rest/guides/best-practices-for-using-the-rest-api#follow-redirects"
    return GitHubError(301, "Moved Permanently", docs, headers={"Location": url}, url=url)
