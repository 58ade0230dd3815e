"""The stand-in sends its app's webhooks as GitHub does: a payload built from what it knows (the
same objects its REST answers hold), signed with the app's webhook secret in
`X-Hub-Signature-256`, POSTed to the app's webhook URL, and kept as a delivery that
`GET /app/hook/deliveries` lists.

It sends them only when told something happened (`StandinState.webhook` says where to):

    hooks = Webhooks(state, standin.url)
    comment = state.add_comment("acme/web", 12, "/claim", user="ann")
    await hooks.send("issue_comment", hooks.comment_created(comment))
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from github_standin.common import Json, iso, node_id_of
from github_standin.deployments import deployment_shape, status_shape
from github_standin.history import Deployment, DeploymentStatus
from github_standin.render import Render
from github_standin.state import Comment, Delivery, PullRequest, Repository, StandinState


def signature(body: bytes, secret: str) -> str:
    """`X-Hub-Signature-256`: the body's HMAC-SHA256 under the webhook secret, as GitHub signs it."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def signed_headers(body: bytes, event: str, delivery_id: str, secret: str) -> dict[str, str]:
    """The headers GitHub sends with a webhook delivery."""
    return {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery_id,
        "X-Hub-Signature-256": signature(body, secret),
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/standin",
    }


@dataclass
class Webhooks:
    """Builds the app's webhook payloads from the stand-in's state and sends them, signed."""

    state: StandinState
    api: str  # the stand-in's own URL: the payloads' API links point back at it
    sent: list[Delivery] = field(default_factory=list)

    @property
    def render(self) -> Render:
        return Render(self.state, self.api)

    def _around(self, repository: Repository, sender: str, action: str, **fields: Any) -> Json:
        installation = self.state.installation_for(repository.full_name.split("/")[0])
        if installation is None:
            raise LookupError(f"the app is not installed on {repository.full_name}")
        return {
            "action": action,
            **fields,
            "repository": self.render.repository(repository),
            "installation": {"id": installation.id, "node_id": node_id_of("Installation", installation.id)},
            "sender": self.render.user(sender),
        }

    def comment_created(self, comment: Comment) -> Json:
        """`issue_comment` `created` for a comment the stand-in holds."""
        repository = self.state.repositories[comment.repo]
        issue = self.render.issue(repository, repository.issues[comment.issue_number])
        rendered = self.render.comment(comment)
        return self._around(repository, comment.user, "created", issue=issue, comment=rendered)

    def pull_request(self, action: str, repository: Repository, pull: PullRequest, sender: str) -> Json:
        """`pull_request` (`opened`, `synchronize`, `closed`...), the PR as it is now, updated now."""
        rendered = self.render.pull(repository, pull)
        now = iso(self.state.stamp())
        rendered["updated_at"] = now
        if pull.state == "closed":
            rendered["closed_at"] = now
            rendered["merged_at"] = now if pull.merged else None
            rendered["merged_by"] = self.render.user(sender) if pull.merged else None
        return self._around(repository, sender, action, number=pull.number, pull_request=rendered)

    def deployment_status(self, repository: Repository, deployment: Deployment, state: str) -> Json:
        """`deployment_status` `created`: `deployment` reached `state` (in_progress, success...);
        the deployment and the status are kept, so the deployments API lists them."""
        history, now = self.state.history, self.state.stamp()
        deployment = history.add_deployment(repository.full_name, deployment)
        status = DeploymentStatus(self.state.next_id(), deployment.id, state, now)
        history.add_status(status)
        return self._around(
            repository, deployment.creator, "created",
            deployment_status=status_shape(self.render, repository, deployment, status),
            deployment=deployment_shape(self.render, repository, deployment),
        )  # fmt: skip

    def deployment_protection_rule(
        self, repository: Repository, deployment: Deployment | None, run_id: int, *, sha: str | None = None
    ) -> Json:
        """`deployment_protection_rule` `requested`: run `run_id` waits on the app's rule before
        deploying (its deployment, `waiting`; None when the job creates none, then `sha`)."""
        history = self.state.history
        environment = deployment.environment if deployment is not None else "production"
        history.request_rule(repository.full_name, run_id, environment)
        shape = None
        if deployment is not None:
            history.add_deployment(repository.full_name, deployment)
            history.add_status(
                DeploymentStatus(self.state.next_id(), deployment.id, "waiting", self.state.stamp())
            )
            shape = deployment_shape(self.render, repository, deployment)
        url = f"{self.api}/repos/{repository.full_name}/actions/runs/{run_id}/deployment_protection_rule"
        return self._around(
            repository, "github-actions[bot]", "requested", environment=environment, event="push",
            sha=deployment.sha if deployment is not None else sha,
            ref=f"refs/heads/{deployment.ref if deployment is not None else repository.default_branch}",
            deployment_callback_url=url, deployment=shape, pull_requests=[],
        )  # fmt: skip

    async def send(self, event: str, payload: Json) -> Delivery:
        """POST one signed delivery to the app's webhook URL; the delivery as GitHub lists it."""
        return await send(self.state, event, payload, self.sent)


async def send(
    state: StandinState, event: str, payload: Json, sent: list[Delivery] | None = None
) -> Delivery:
    """POST `payload` as a signed `event` delivery to `state.webhook`, and record the delivery."""
    target = state.webhook
    if target is None:
        raise RuntimeError("the stand-in has no webhook URL to send to (StandinState.webhook)")
    body, guid = json.dumps(payload).encode(), str(uuid.uuid4())
    timeout = aiohttp.ClientTimeout(total=10)  # GitHub gives up on a delivery after 10 seconds
    headers = signed_headers(body, event, guid, target.secret)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.post(target.url, data=body, headers=headers) as r,
        ):
            await r.read()
            code, status = r.status, "OK" if 200 <= r.status < 300 else f"Invalid HTTP Response: {r.status}"
    except (aiohttp.ClientError, TimeoutError) as error:
        code, status = 0, f"failed to connect: {type(error).__name__}"
    delivery = state.add_delivery(
        event,
        guid=guid,
        action=payload.get("action"),
        status=status,
        status_code=code,
        installation_id=(payload.get("installation") or {}).get("id"),
        repository_id=(payload.get("repository") or {}).get("id"),
        delivered_at=iso(state.now()),
    )
    if sent is not None:
        sent.append(delivery)
    return delivery
