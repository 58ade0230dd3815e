"""The GitHub stand-in's GraphQL endpoint, for the one query railyard asks: a pull request's
closing issue references (its body's closing keywords and its Development-sidebar links).

Like GitHub, it answers 200 with `data` and, for what it cannot resolve, `errors` of type
NOT_FOUND (the value at that path is null); a query of any other shape is answered with an
error rather than a guess.
"""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web

from github_standin.common import ACCESS_LEVELS
from github_standin.lookups import BODY, STATE, installation_of, respond
from github_standin.project_graphql import resolver_for
from github_standin.state import PullRequest, Repository

_KEYWORD = re.compile(r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s+#(\d+)\b", re.IGNORECASE)
_FORBIDDEN = "Resource not accessible by integration"
_SHAPE = ("repository(", "pullRequest(", "closingIssuesReferences(", "nameWithOwner")


def _not_found(path: list[str], message: str) -> dict[str, Any]:
    return {"type": "NOT_FOUND", "path": path, "locations": [{"line": 3, "column": 5}], "message": message}


def closing_references(repository: Repository, pull: PullRequest) -> list[dict[str, Any]]:
    """Issues the PR closes: the body's keywords (this repository) and the sidebar's links, once each."""
    named: list[tuple[str, int]] = [(repository.full_name, int(n)) for n in _KEYWORD.findall(pull.body or "")]
    for link in pull.closing_issues:
        if isinstance(link, int):
            named.append((repository.full_name, link))
        else:
            other, _, number = link.partition("#")
            named.append((other, int(number)))
    unique = list(dict.fromkeys(named))
    return [{"number": n, "repository": {"nameWithOwner": name}} for name, n in unique]


async def graphql(request: web.Request) -> web.Response:
    """POST /graphql: the closing issue references of one pull request, or a project query."""
    sent = request[BODY]
    body: dict[str, Any] = sent or {}
    query, variables = body.get("query"), body.get("variables") or {}
    if not isinstance(query, str):
        return respond({"errors": [{"message": "A query attribute must be specified and must be a string."}]})
    installation = installation_of(request)
    resolve = resolver_for(query)
    if resolve is not None:
        return respond(resolve(request.app[STATE], installation, dict(variables)))
    if not all(part in query for part in _SHAPE):
        return respond({"errors": [{"message": "the stand-in answers only the queries railyard sends"}]})
    owner, name, number = variables.get("owner"), variables.get("name"), variables.get("number")
    full_name = f"{owner}/{name}"
    repository = request.app[STATE].repository(full_name)
    if repository is None or installation.account.lower() != str(owner).lower():
        message = f"Could not resolve to a Repository with the name '{full_name}'."
        return respond({"data": {"repository": None}, "errors": [_not_found(["repository"], message)]})
    granted = installation.permissions.get("pull_requests", "none")
    if ACCESS_LEVELS.index(granted) < ACCESS_LEVELS.index("read"):
        forbidden = {"type": "FORBIDDEN", "path": ["repository", "pullRequest"], "message": _FORBIDDEN}
        return respond({"data": {"repository": {"pullRequest": None}}, "errors": [forbidden]})
    pull = repository.pulls.get(number) if isinstance(number, int) else None
    if pull is None:
        message = f"Could not resolve to a PullRequest with the number of {number}."
        errors = [_not_found(["repository", "pullRequest"], message)]
        return respond({"data": {"repository": {"pullRequest": None}}, "errors": errors})
    references = {"nodes": closing_references(repository, pull)}
    return respond({"data": {"repository": {"pullRequest": {"closingIssuesReferences": references}}}})
