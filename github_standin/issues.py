"""The GitHub stand-in's issue endpoints: issues (and transferred ones), comments, reactions and
assignees."""

from __future__ import annotations

from aiohttp import web

from github_standin.common import REACTIONS, parse_time
from github_standin.lookups import (
    BODY,
    STATE,
    USER,
    comment_of,
    installation_of,
    invalid,
    issue_of,
    not_found,
    paginate,
    renderer,
    repository_of,
    respond,
)
from github_standin.state import Reaction


async def get_issue(request: web.Request) -> web.Response:
    repository = repository_of(request)
    number = int(request.match_info["number"])
    return respond(renderer(request).issue(repository, issue_of(repository, number, request)))


async def get_issue_by_repository_id(request: web.Request) -> web.Response:
    """GET /repositories/{id}/issues/{number}: where a transferred issue's 301 points."""
    state, wanted = request.app[STATE], int(request.match_info["repository_id"])
    repository = next((r for r in state.repositories.values() if r.id == wanted), None)
    owner = repository.full_name.split("/")[0] if repository else ""
    if repository is None or installation_of(request).account.lower() != owner.lower():
        raise not_found()
    number = int(request.match_info["number"])
    return respond(renderer(request).issue(repository, issue_of(repository, number, request)))


async def list_comments(request: web.Request) -> web.Response:
    """Oldest first, paged; ?since keeps those updated at or after it."""
    repository, number = repository_of(request), int(request.match_info["number"])
    issue_of(repository, number, request)
    since = parse_time(request.query["since"]) if "since" in request.query else None
    comments = [
        c
        for c in sorted(request.app[STATE].comments.values(), key=lambda c: c.id)
        if (c.repo, c.issue_number) == (repository.full_name, number)
        and (since is None or c.updated_at >= since)
    ]
    page, headers = paginate(request, comments)
    return respond([renderer(request).comment(c) for c in page], headers=headers)


async def create_comment(request: web.Request) -> web.Response:
    state, repository, number = request.app[STATE], repository_of(request), int(request.match_info["number"])
    issue_of(repository, number, request)
    if not isinstance(body := (request[BODY] or {}).get("body"), str):
        raise invalid("IssueComment", "body")
    if (user := request[USER]) is not None:  # a user's own token: the comment is theirs
        comment = state.add_comment(repository.full_name, number, body, user, "User")
    else:
        comment = state.add_comment(repository.full_name, number, body, state.bot_login, "Bot")
        comment.app_id = state.app_id
    rendered = renderer(request).comment(comment)
    return respond(rendered, 201, {"Location": rendered["url"]})


async def get_comment(request: web.Request) -> web.Response:
    return respond(renderer(request).comment(comment_of(request)))


async def edit_comment(request: web.Request) -> web.Response:
    comment = comment_of(request)
    if not isinstance(body := (request[BODY] or {}).get("body"), str):
        raise invalid("IssueComment", "body")
    comment.body, comment.updated_at = body, request.app[STATE].stamp()
    return respond(renderer(request).comment(comment))


async def create_reaction(request: web.Request) -> web.Response:
    """201 for a new reaction; 200 with the existing one if this user already reacted so."""
    state, comment = request.app[STATE], comment_of(request)
    if (content := (request[BODY] or {}).get("content")) not in REACTIONS:
        raise invalid("Reaction", "content", "invalid")
    key = (comment.id, content, state.bot_login)
    if existing := next((r for r in state.reactions if (r.comment_id, r.content, r.user) == key), None):
        return respond(renderer(request).reaction(existing), 200)
    reaction = Reaction(state.next_id(), comment.id, content, state.bot_login, state.stamp())
    state.reactions.append(reaction)
    return respond(renderer(request).reaction(reaction), 201)


async def add_assignees(request: web.Request) -> web.Response:
    repository = repository_of(request)
    issue = issue_of(repository, int(request.match_info["number"]), request)
    for login in (request[BODY] or {}).get("assignees", []):
        if login not in issue.assignees:
            issue.assignees.append(login)
    return respond(renderer(request).issue(repository, issue), 201)


async def remove_assignees(request: web.Request) -> web.Response:
    """DELETE .../assignees: 200 with the issue; a login that is not assigned is skipped."""
    repository = repository_of(request)
    issue = issue_of(repository, int(request.match_info["number"]), request)
    logins = (request[BODY] or {}).get("assignees", [])
    if not isinstance(logins, list) or not all(isinstance(login, str) for login in logins):
        raise invalid("Issue", "assignees")
    issue.assignees[:] = [login for login in issue.assignees if login not in logins]
    return respond(renderer(request).issue(repository, issue), 200)
