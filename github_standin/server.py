"""The GitHub stand-in as an aiohttp application: its routes, the control API under /_standin/,
and serving it in-process."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass

from aiohttp import web

from github_standin.apps import (
    check_org_member,
    create_token,
    get_app,
    get_collaborator_permission,
    get_repo_installation,
    get_team_membership,
    list_deliveries,
    redeliver,
)
from github_standin.checks import create_check_run, list_check_runs, list_check_suites, update_check_run
from github_standin.common import Handler, iso, parse_time, plain
from github_standin.deployments import list_deployment_statuses, list_deployments, review_protection_rule
from github_standin.edge import RULES, github_edge
from github_standin.faults import Fault, LimitWatch
from github_standin.graphql import graphql
from github_standin.issues import (
    add_assignees,
    create_comment,
    create_reaction,
    edit_comment,
    get_comment,
    get_issue,
    get_issue_by_repository_id,
    list_comments,
    remove_assignees,
)
from github_standin.lookups import STATE, respond
from github_standin.oauth import (
    access_token,
    authorize,
    get_user,
    get_user_by_id,
    list_user_installation_repositories,
    list_user_installations,
    revoke_token,
)
from github_standin.pages import issue_list, issue_page
from github_standin.pull_lists import list_commit_pulls, list_pulls
from github_standin.repos import (
    compare,
    get_branch,
    get_commit,
    get_content,
    get_pull,
    get_repo,
    get_repo_by_id,
    list_pull_files,
)
from github_standin.state import StandinState, WebhookTarget
from github_standin.webhooks import Webhooks

_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}(?:\[bot\])?")


async def _control_calls(request: web.Request) -> web.Response:
    if request.method == "DELETE":
        request.app[STATE].calls.clear()
    return respond(plain(request.app[STATE].calls))


async def _control_counters(request: web.Request) -> web.Response:
    return respond(request.app[STATE].counters())


async def _control_state(request: web.Request) -> web.Response:
    if request.method == "POST":
        request.app[STATE].seed(await request.json())
    return respond(request.app[STATE].snapshot())


async def _control_faults(request: web.Request) -> web.Response:
    data = await request.json()
    request.app[STATE].inject(data["method"], data["path"], *(Fault(**fault) for fault in data["faults"]))
    return respond({}, 201)


async def _control_limits(request: web.Request) -> web.Response:
    """POST turns the Retry-After watch on (afresh); GET says what it saw (a subprocess's
    callers cannot reach `state.limit_watch` otherwise)."""
    state = request.app[STATE]
    if request.method == "POST":
        state.limit_watch = LimitWatch(grace=(await request.json()).get("grace", 1.0))
    watch = state.limit_watch
    if watch is None:
        return respond({"limits": [], "ignored": []})
    limits = [[installation, sent, until] for installation, (sent, until) in watch.limits.items()]
    return respond({"limits": limits, "ignored": [list(seen) for seen in watch.ignored]})


async def _control_clock(request: web.Request) -> web.Response:
    state, data = request.app[STATE], await request.json()
    if "now" in data:
        state.set_clock(parse_time(data["now"]), data.get("step_seconds", 0.0))
    if "advance" in data:
        state.advance(data["advance"])
    return respond({"now": iso(state.now())})


async def _control_webhook(request: web.Request) -> web.Response:
    """Where the stand-in sends the app's webhooks from now on: {"url", "secret"}."""
    data = await request.json()
    if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in ("url", "secret")):
        return respond({"message": 'expected {"url": "...", "secret": "..."}'}, 400)
    request.app[STATE].webhook = WebhookTarget(data["url"], data["secret"])
    return respond({"url": data["url"]})


async def _control_comment(request: web.Request) -> web.Response:
    """Someone comments on an issue: {"repo", "number", "body", "login"}. The stand-in keeps the
    comment and sends the app its signed `issue_comment` webhook; answers the comment and how
    the delivery went. Bad input: 400 or 404 with a message, nothing written, nothing sent."""
    state = request.app[STATE]
    try:
        data = await request.json()
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return respond({"message": "expected a JSON object"}, 400)
    repo, number, body, login = (data.get(key) for key in ("repo", "number", "body", "login"))
    if not isinstance(login, str) or not _LOGIN.fullmatch(login):
        return respond({"message": f"login must be a GitHub login, not {login!r}"}, 400)
    if not isinstance(body, str) or not body.strip():
        return respond({"message": "body must be the comment's text"}, 400)
    repository = state.repository(repo) if isinstance(repo, str) else None
    if repository is None:
        return respond({"message": f"no repository {repo!r}"}, 404)
    if not isinstance(number, int) or number not in repository.issues:
        return respond({"message": f"{repository.full_name} has no issue or pull request #{number}"}, 404)
    if state.webhook is None:
        return respond({"message": "no webhook URL to send to: POST /_standin/webhook first"}, 409)
    user_type = "Bot" if login.endswith("[bot]") else "User"
    comment = state.add_comment(repository.full_name, number, body, user=login, user_type=user_type)
    hooks = Webhooks(state, f"{request.scheme}://{request.host}")
    delivery = await hooks.send("issue_comment", hooks.comment_created(comment))
    answer = {"comment": hooks.render.comment(comment), "delivery": plain(delivery)}
    return respond(answer, 201)


def create_standin(state: StandinState | None = None) -> web.Application:
    """The stand-in as an aiohttp application over `state` (a fresh one by default)."""
    app = web.Application(middlewares=[github_edge])
    app[STATE] = state if state is not None else StandinState()
    app[RULES] = {}
    jwt, token, repo = "jwt", "installation", "/repos/{owner}/{repo}"
    issue, comment = repo + "/issues/{number:\\d+}", repo + "/issues/comments/{comment_id:\\d+}"
    team = "/orgs/{org}/teams/{team_slug}"
    routes: list[tuple[str, str, Handler, str, str | None]] = [
        ("POST", "/app/installations/{installation_id:\\d+}/access_tokens", create_token, jwt, None),
        ("GET", "/app", get_app, jwt, None),
        ("GET", repo + "/installation", get_repo_installation, jwt, None),
        ("GET", "/app/hook/deliveries", list_deliveries, jwt, None),
        ("POST", "/app/hook/deliveries/{delivery_id:\\d+}/attempts", redeliver, jwt, None),
        ("GET", repo, get_repo, "either", None),  # metadata: every installation may read it
        ("GET", "/repositories/{repository_id:\\d+}", get_repo_by_id, "either", None),
        ("GET", repo + "/contents/{path:.+}", get_content, token, "contents:read"),
        ("GET", issue, get_issue, token, "issues:read"),
        (
            "GET",
            "/repositories/{repository_id:\\d+}/issues/{number:\\d+}",
            get_issue_by_repository_id,
            token,
            "issues:read",
        ),
        ("GET", issue + "/comments", list_comments, "either", "issues:read"),
        ("POST", issue + "/comments", create_comment, "either", "issues:write"),
        ("POST", issue + "/assignees", add_assignees, token, "issues:write"),
        ("DELETE", issue + "/assignees", remove_assignees, token, "issues:write"),
        ("GET", comment, get_comment, "either", "issues:read"),
        ("PATCH", comment, edit_comment, token, "issues:write"),
        ("POST", comment + "/reactions", create_reaction, token, "issues:write"),
        ("POST", repo + "/check-runs", create_check_run, token, "checks:write"),
        ("PATCH", repo + "/check-runs/{check_run_id:\\d+}", update_check_run, token, "checks:write"),
        # A user's token reads check-runs too (GitHub: a fine-grained token with Checks: read).
        ("GET", repo + "/commits/{ref:.+}/check-runs", list_check_runs, "either", "checks:read"),
        ("GET", repo + "/commits/{ref:.+}/check-suites", list_check_suites, "either", "checks:read"),
        ("GET", repo + "/commits/{ref:[^/]+}/pulls", list_commit_pulls, token, "pull_requests:read"),
        ("GET", repo + "/commits/{ref:[^/]+}", get_commit, token, "contents:read"),
        ("GET", team + "/memberships/{username}", get_team_membership, token, "members:read"),
        ("GET", "/orgs/{org}/members/{username}", check_org_member, token, "members:read"),
        ("GET", "/user/{account_id:\\d+}", get_user_by_id, token, None),
        ("GET", repo + "/collaborators/{username}/permission", get_collaborator_permission, token, None),
        ("GET", repo + "/branches/{branch:.+}", get_branch, token, None),
        ("GET", repo + "/pulls", list_pulls, token, "pull_requests:read"),
        ("GET", repo + "/pulls/{number:\\d+}", get_pull, token, "pull_requests:read"),
        ("GET", repo + "/pulls/{number:\\d+}/files", list_pull_files, token, "pull_requests:read"),
        ("GET", repo + "/compare/{basehead:.+}", compare, token, "contents:read"),
        ("GET", repo + "/deployments", list_deployments, token, "deployments:read"),
        (
            "GET",
            repo + "/deployments/{deployment_id:\\d+}/statuses",
            list_deployment_statuses,
            token,
            "deployments:read",
        ),
        (
            "POST",
            repo + "/actions/runs/{run_id:\\d+}/deployment_protection_rule",
            review_protection_rule,
            token,
            "deployments:write",
        ),
        # Each GraphQL query checks its own permission (GitHub answers 200 with FORBIDDEN).
        ("POST", "/graphql", graphql, token, None),
        # Sign-in: the web host's OAuth pages (no API credential) and what a user token reads.
        ("GET", "/login/oauth/authorize", authorize, "web", None),
        ("DELETE", "/applications/{client_id}/token", revoke_token, "web", None),
        ("POST", "/login/oauth/access_token", access_token, "web", None),
        ("GET", "/user", get_user, "user", None),
        ("GET", "/user/installations", list_user_installations, "user", None),
        (
            "GET",
            "/user/installations/{installation_id:\\d+}/repositories",
            list_user_installation_repositories,
            "user",
            None,
        ),
    ]
    for method, path, handler, credential, needs in routes:
        app[RULES][app.router.add_route(method, path, handler)] = (credential, needs)
    for method, name, control in [
        ("GET", "calls", _control_calls),
        ("DELETE", "calls", _control_calls),
        ("GET", "counters", _control_counters),
        ("GET", "state", _control_state),
        ("POST", "state", _control_state),
        ("POST", "faults", _control_faults),
        ("POST", "clock", _control_clock),
        ("GET", "limits", _control_limits),
        ("POST", "limits", _control_limits),
        ("POST", "webhook", _control_webhook),
        ("POST", "comments", _control_comment),
    ]:
        app.router.add_route(method, f"/_standin/{name}", control)
    # github.com's pages for people (after the API's routes, which they must not shadow).
    pages = [("/{owner}/{repo}/issues", issue_list), ("/{owner}/{repo}/issues/{number:\\d+}", issue_page)]
    for path, page in pages:
        app[RULES][app.router.add_route("GET", path, page)] = ("web", None)
    return app


@dataclass
class RunningStandin:
    url: str
    port: int
    state: StandinState


@contextlib.asynccontextmanager
async def running_standin(state: StandinState | None = None, port: int = 0) -> AsyncIterator[RunningStandin]:
    """Serve the stand-in on 127.0.0.1 (a free port by default) for the block's duration."""
    state = state if state is not None else StandinState()
    # A short shutdown timeout: an apply_then_timeout answer may still be asleep at exit.
    runner = web.AppRunner(create_standin(state), access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", port).start()
        bound = runner.addresses[0][1]
        yield RunningStandin(f"http://127.0.0.1:{bound}", bound, state)
    finally:
        await runner.cleanup()
