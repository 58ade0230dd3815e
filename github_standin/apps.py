"""The GitHub stand-in's app endpoints (installation tokens, the app, its webhook deliveries) and
who holds which role (team memberships, collaborator permissions)."""

from __future__ import annotations

from dataclasses import replace

from aiohttp import web

from github_standin.common import ROLES, iso, plain
from github_standin.lookups import (
    BODY,
    STATE,
    GitHubError,
    installation_of,
    not_found,
    renderer,
    repository_of,
    respond,
)


async def create_token(request: web.Request) -> web.Response:
    state = request.app[STATE]
    installation = state.installations.get(int(request.match_info["installation_id"]))
    if installation is None:
        raise not_found()
    token = state.tokens[state.issue_token(installation.id)]
    permissions = (request[BODY] or {}).get("permissions") or installation.permissions
    body = {"token": token.token, "expires_at": iso(token.expires_at), "permissions": permissions}
    return respond(body | {"repository_selection": "all"}, 201)


async def get_app(request: web.Request) -> web.Response:
    return respond(renderer(request).app())


async def get_repo_installation(request: web.Request) -> web.Response:
    state, owner = request.app[STATE], request.match_info["owner"]
    installation = state.installation_for(owner)
    if installation is None or state.repository(f"{owner}/{request.match_info['repo']}") is None:
        raise not_found()
    return respond(renderer(request).installation(installation))


async def list_deliveries(request: web.Request) -> web.Response:
    """Newest first; ?cursor=v1_<id> continues after that delivery, as GitHub's Link says."""
    items = sorted(request.app[STATE].deliveries, key=lambda d: d.id, reverse=True)
    if cursor := request.query.get("cursor"):
        items = [d for d in items if d.id < int(cursor.removeprefix("v1_"))]
    per_page = min(int(request.query.get("per_page", 30)), 100)
    page, headers = items[:per_page], {}
    if len(items) > per_page:
        next_url = request.url.update_query(per_page=per_page, cursor=f"v1_{page[-1].id}")
        headers["Link"] = f'<{next_url}>; rel="next"'
    return respond([plain(d) | {"throttled_at": None} for d in page], headers=headers)


async def redeliver(request: web.Request) -> web.Response:
    state, delivery_id = request.app[STATE], int(request.match_info["delivery_id"])
    original = next((d for d in state.deliveries if d.id == delivery_id), None)
    if original is None:
        raise not_found()
    state.redelivery_attempts.append(delivery_id)
    # GitHub records the attempt as a new delivery of the same event (same guid).
    state.deliveries.append(
        replace(original, id=state.next_id(), delivered_at=state.stamp(), redelivery=True)
    )
    return respond({}, 202)


async def get_team_membership(request: web.Request) -> web.Response:
    state, info = request.app[STATE], request.match_info
    org, team, login = info["org"], info["team_slug"], info["username"]
    if installation_of(request).account.lower() != org.lower():
        raise GitHubError(403, "Resource not accessible by integration")
    if (membership := state.team_memberships.get((org, team, login))) is None:
        raise not_found()
    url = f"{renderer(request).api}/orgs/{org}/teams/{team}/memberships/{login}"
    return respond({"url": url, "role": "member", "state": membership})


async def check_org_member(request: web.Request) -> web.Response:
    """GET /orgs/{org}/members/{username}: 204 for a member of the organization, 404 otherwise.

    As on GitHub, an active member of one of its teams is a member of the organization; a pending
    team membership is an invitation, not a membership. A requester that is not of the
    organization (an installation on another account) gets 302 to the public members instead.
    """
    state, info = request.app[STATE], request.match_info
    org, login = info["org"], info["username"]
    if installation_of(request).account.lower() != org.lower():
        location = f"{renderer(request).api}/orgs/{org}/public_members/{login}"
        return web.Response(status=302, headers={"Location": location})
    folded = (org.casefold(), login.casefold())
    members = {(o.casefold(), m.casefold()) for o, m in state.org_members}
    in_a_team = any(
        (o.casefold(), m.casefold()) == folded and held == "active"
        for (o, _, m), held in state.team_memberships.items()
    )
    if folded not in members and not in_a_team:
        raise not_found()
    return web.Response(status=204)


async def get_collaborator_permission(request: web.Request) -> web.Response:
    """The role, and the legacy permission that folds maintain into write and triage into read."""
    repository, login = repository_of(request), request.match_info["username"]
    # Anyone may read a public repository, so GitHub says "read" for strangers there.
    stranger = "none" if repository.private else "read"
    role = request.app[STATE].permissions.get((repository.full_name, login), stranger)
    legacy = {"triage": "read", "maintain": "write"}.get(role, role)
    rank = ROLES.index(role)
    levels = {"pull": "read", "triage": "triage", "push": "write", "maintain": "maintain", "admin": "admin"}
    flags = {flag: rank >= ROLES.index(level) for flag, level in levels.items()}
    user = renderer(request).user(login) | {"permissions": flags, "role_name": role}
    return respond({"permission": legacy, "role_name": role, "user": user})
