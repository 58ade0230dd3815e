"""The GitHub stand-in's sign-in endpoints: the OAuth web flow on the web host
(`/login/oauth/authorize`, `/login/oauth/access_token`) and what a user token reads
(`/user`, `/user/installations`, `/user/installations/{id}/repositories`), as GitHub answers.

The token endpoint answers its errors with 200 and `{"error": ...}`, as GitHub does. The user's
installation lists carry an ETag; `If-None-Match` with it answers 304 (and costs no rate limit).
A user reaches the repositories of an installation they hold an explicit permission on
(`StandinState.permissions`), as GitHub documents for user-to-server tokens.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any
from urllib.parse import parse_qsl, urlencode

from aiohttp import web

from github_standin.lookups import BODY, STATE, GitHubError, not_found, paginate, renderer, respond
from github_standin.state import Installation, Repository, StandinState

_TROUBLE = (
    "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors"
)
_ERRORS = {
    "incorrect_client_credentials": "The client_id and/or client_secret passed are incorrect.",
    "redirect_uri_mismatch": "The redirect_uri MUST match the registered callback URL for this application.",
    "bad_verification_code": "The code passed is incorrect or expired.",
}


async def authorize(request: web.Request) -> web.Response:
    """The authorization page: the signed-in account approves at once and is sent back with a code."""
    oauth, query = request.app[STATE].oauth, request.query
    if query.get("client_id") != oauth.client_id:
        return web.Response(status=404, text="<h1>404</h1>", content_type="text/html")
    redirect_uri = query.get("redirect_uri", "")
    if oauth.approving is None or not redirect_uri:
        return web.Response(status=200, text="<h1>Sign in to GitHub</h1>", content_type="text/html")
    code = oauth.issue_code(oauth.approving, redirect_uri)
    back = {"code": code} | ({"state": query["state"]} if "state" in query else {})
    separator = "&" if "?" in redirect_uri else "?"
    raise web.HTTPFound(f"{redirect_uri}{separator}{urlencode(back)}")


async def access_token(request: web.Request) -> web.Response:
    """Exchange a code for a user token; every refusal is a 200 with `error`, as GitHub answers."""
    fields = await _fields(request)
    state = request.app[STATE]
    oauth = state.oauth
    if fields.get("client_id") != oauth.client_id or fields.get("client_secret") != oauth.client_secret:
        return _token_answer(request, _error("incorrect_client_credentials"))
    issued = oauth.codes.pop(str(fields.get("code", "")), None)  # a code works once
    if issued is None:
        return _token_answer(request, _error("bad_verification_code"))
    login, redirect_uri = issued
    if fields.get("redirect_uri") not in (None, redirect_uri):
        return _token_answer(request, _error("redirect_uri_mismatch"))
    token = oauth.issue_token(login, state.now())
    body = {
        "access_token": token.token,
        "expires_in": int((token.expires_at - state.now()).total_seconds()),
        "refresh_token": f"ghr_{hashlib.sha256(token.token.encode()).hexdigest()[:36]}",
        "refresh_token_expires_in": 15_897_600,
        "scope": "",
        "token_type": "bearer",
    }
    return _token_answer(request, body)


async def revoke_token(request: web.Request) -> web.Response:
    """`DELETE /applications/{client_id}/token`: the OAuth client (HTTP Basic) revokes one of its
    user tokens; 204, and the token stops working at once. Wrong client credentials: 404."""
    oauth = request.app[STATE].oauth
    scheme, _, encoded = request.headers.get("Authorization", "").partition(" ")
    try:
        given = base64.b64decode(encoded).decode() if scheme.lower() == "basic" else ""
    except (ValueError, UnicodeDecodeError):
        given = ""
    if (
        request.match_info["client_id"] != oauth.client_id
        or given != f"{oauth.client_id}:{oauth.client_secret}"
    ):
        raise not_found()
    token = (request[BODY] or {}).get("access_token")
    if not isinstance(token, str) or token not in oauth.tokens:
        raise not_found()
    del oauth.tokens[token]
    return web.Response(status=204)


async def get_user(request: web.Request) -> web.Response:
    """The token's account (its ETag and 304s come from the edge, as for every GET)."""
    return respond(renderer(request).user(user_login(request)))


async def get_user_by_id(request: web.Request) -> web.Response:
    """GET /user/{account_id}: the account with that id under the login it has now; 404 for none."""
    login = request.app[STATE].login_of(int(request.match_info["account_id"]))
    if login is None:
        raise not_found()
    return respond(renderer(request).user(login))


async def list_user_installations(request: web.Request) -> web.Response:
    state, login = request.app[STATE], user_login(request)
    reachable = [i for i in state.installations.values() if readable(state, login, i)]
    page, headers = paginate(request, reachable)
    body = {"total_count": len(reachable), "installations": [renderer(request).installation(i) for i in page]}
    return respond(body, headers=headers)


async def list_user_installation_repositories(request: web.Request) -> web.Response:
    state, login = request.app[STATE], user_login(request)
    installation = state.installations.get(int(request.match_info["installation_id"]))
    if installation is None or not readable(state, login, installation):
        raise not_found()
    repositories = readable(state, login, installation)
    page, headers = paginate(request, repositories)
    body = {
        "total_count": len(repositories),
        "repository_selection": "all",
        "repositories": [renderer(request).repository(r) | _permissions(state, login, r) for r in page],
    }
    return respond(body, headers=headers)


def readable(state: StandinState, login: str, installation: Installation) -> list[Repository]:
    """The installation's repositories `login` holds an explicit permission on."""
    owner = installation.account.lower()
    return [
        r
        for name, r in sorted(state.repositories.items())
        if name.split("/")[0].lower() == owner and state.permissions.get((name, login), "none") != "none"
    ]


def _permissions(state: StandinState, login: str, repository: Repository) -> dict[str, Any]:
    return permissions_of(state.permissions[(repository.full_name, login)])


def permissions_of(role: str) -> dict[str, Any]:
    """A repository's `permissions` as GitHub shows them to a person holding `role` ("none": a
    public repository read by anyone)."""
    ranks = ("read", "triage", "write", "maintain", "admin")
    held = ranks.index(role) if role in ranks else 0
    names = ("pull", "triage", "push", "maintain", "admin")
    return {"permissions": {name: held >= index for index, name in enumerate(names)}}


def user_login(request: web.Request) -> str:
    """The login the request's user token belongs to (401 when it is not a live one)."""
    credential = request.headers.get("Authorization", "").partition(" ")[2].strip()
    login = request.app[STATE].oauth.user_of(credential, request.app[STATE].now())
    if login is None:
        raise GitHubError(401, "Requires authentication")
    return login


async def _fields(request: web.Request) -> dict[str, Any]:
    """The request's parameters: the query string, then a form or JSON body (GitHub takes each)."""
    fields: dict[str, Any] = dict(request.query)
    text = await request.text()
    if request.content_type == "application/json":
        try:
            parsed = json.loads(text or "{}")
        except ValueError:
            parsed = None
        fields |= parsed if isinstance(parsed, dict) else {}
    else:
        fields |= dict(parse_qsl(text))
    return fields


def _error(code: str) -> dict[str, str]:
    return {
        "error": code,
        "error_description": _ERRORS[code],
        "error_uri": f"{_TROUBLE}#{code.replace('_', '-')}",
    }


def _token_answer(request: web.Request, body: dict[str, Any]) -> web.Response:
    """JSON when asked for (`Accept: application/json`), else form-encoded, as GitHub answers."""
    if "application/json" in request.headers.get("Accept", ""):
        return respond(body)
    return web.Response(
        text=urlencode({k: str(v) for k, v in body.items()}), content_type="application/x-www-form-urlencoded"
    )
