"""The GitHub stand-in's deployments and custom deployment protection rules: listing an
environment's deployments and a deployment's statuses (newest first, paged), and the app's
review of a rule a workflow run waits on, with the answers GitHub gives.

The review (`POST /repos/{owner}/{repo}/actions/runs/{run_id}/deployment_protection_rule`) is
described by GitHub's REST description (@octokit/openapi, `actions/review-custom-gates-for-run`)
with one answer, 204. The others are what GitHub does and the stand-in does the same: a run that
has no rule of this app is 404; a body without `environment_name`, or with neither `state` nor
`comment`, or a `state` other than approved or rejected, is 422; a rule already answered (or no
rule waiting for that environment) is 422 too, so a second answer never lands.
"""

from __future__ import annotations

from aiohttp import web

from github_standin.common import Json, iso, node_id_of
from github_standin.history import Deployment, DeploymentStatus
from github_standin.lookups import (
    BODY,
    STATE,
    GitHubError,
    invalid,
    not_found,
    paginate,
    repository_of,
    respond,
)
from github_standin.render import Render
from github_standin.state import Repository

REVIEW_STATES = ("approved", "rejected")


def deployment_shape(render: Render, repository: Repository, deployment: Deployment) -> Json:
    """A deployment as the REST API and the webhooks show it."""
    url = f"{render.api}/repos/{repository.full_name}/deployments/{deployment.id}"
    at = iso(deployment.created_at)
    return {
        "id": deployment.id,
        "node_id": node_id_of("Deployment", deployment.id),
        "url": url,
        "sha": deployment.sha,
        "ref": deployment.ref,
        "task": "deploy",
        "payload": {},
        "original_environment": deployment.environment,
        "environment": deployment.environment,
        "description": None,
        "creator": render.user(deployment.creator),
        "created_at": at,
        "updated_at": at,
        "statuses_url": f"{url}/statuses",
        "repository_url": f"{render.api}/repos/{repository.full_name}",
        "transient_environment": False,
        "production_environment": deployment.environment == "production",
    }


def status_shape(
    render: Render, repository: Repository, deployment: Deployment, status: DeploymentStatus
) -> Json:
    """A deployment status as the REST API and the webhooks show it."""
    url = f"{render.api}/repos/{repository.full_name}/deployments/{deployment.id}"
    at = iso(status.created_at)
    return {
        "id": status.id,
        "node_id": node_id_of("DeploymentStatus", status.id),
        "url": f"{url}/statuses/{status.id}",
        "state": status.state,
        "creator": render.user(deployment.creator),
        "description": "",
        "environment": deployment.environment,
        "target_url": "",
        "log_url": "",
        "environment_url": "",
        "created_at": at,
        "updated_at": at,
        "deployment_url": url,
        "repository_url": f"{render.api}/repos/{repository.full_name}",
    }


def _render(request: web.Request) -> Render:
    return Render(request.app[STATE], f"{request.scheme}://{request.host}")


async def list_deployments(request: web.Request) -> web.Response:
    """GET /repos/{owner}/{repo}/deployments: newest first, filtered by ?sha, ?ref, ?task and
    ?environment, paged."""
    repository = repository_of(request)
    found = list(reversed(request.app[STATE].history.deployments_of(repository.full_name)))
    query = request.query
    for name in ("sha", "ref", "environment"):
        if name in query:
            found = [d for d in found if getattr(d, name) == query[name]]
    if query.get("task", "deploy") != "deploy":
        found = []
    page, headers = paginate(request, [deployment_shape(_render(request), repository, d) for d in found])
    return respond(page, headers=headers)


async def list_deployment_statuses(request: web.Request) -> web.Response:
    """GET /repos/{owner}/{repo}/deployments/{deployment_id}/statuses: newest first, paged; 404
    for a deployment the repository does not have."""
    repository, history = repository_of(request), request.app[STATE].history
    deployment = history.deployment(repository.full_name, int(request.match_info["deployment_id"]))
    if deployment is None:
        raise not_found()
    statuses = reversed(history.statuses.get(deployment.id, []))
    listed = [status_shape(_render(request), repository, deployment, s) for s in statuses]
    page, headers = paginate(request, listed)
    return respond(page, headers=headers)


async def review_protection_rule(request: web.Request) -> web.Response:
    """The app approves or rejects (or only comments on) its rule for one environment of a run."""
    repository, history = repository_of(request), request.app[STATE].history
    rules = history.rules_of(repository.full_name, int(request.match_info["run_id"]))
    if not rules:
        raise not_found()
    body = request[BODY] or {}
    environment, state, comment = body.get("environment_name"), body.get("state"), body.get("comment")
    if not isinstance(environment, str):
        raise invalid("DeploymentProtectionRuleReview", "environment_name")
    if state is None and not isinstance(comment, str):
        raise invalid("DeploymentProtectionRuleReview", "comment")
    if state is not None and state not in REVIEW_STATES:
        raise invalid("DeploymentProtectionRuleReview", "state", "invalid")
    waiting = [rule for rule in rules if rule.environment == environment and rule.answer is None]
    if not waiting:
        raise GitHubError(422, f"No pending deployment protection rule for environment {environment}")
    if state is None:
        waiting[-1].comments.append(str(comment))
    else:
        waiting[-1].answer = {"environment_name": environment, "state": state, "comment": comment}
    return web.Response(status=204)
