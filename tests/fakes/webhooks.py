"""Webhook payloads in GitHub's shape, with only the fields railyard reads (plus the ones that
identify them), for dispatching to handlers without a server. Real payloads for the shapes
themselves live under tests/fixtures/webhooks."""

from __future__ import annotations

import itertools
from typing import Any

from tests.fakes.github import REPOSITORY_ID, user

REPOSITORY = "acme/app"
INSTALLATION = 77
_COMMENT_IDS = itertools.count(3_000_000_001)


def _base(action: str | None, repository: str = REPOSITORY, **fields: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "repository": {"full_name": repository, "default_branch": "main"},
        "installation": {"id": INSTALLATION},
        "sender": user("rachel", 101),
        **fields,
    }
    if action is not None:
        payload["action"] = action
    return payload


def comment(
    number: int,
    body: str,
    *,
    author: tuple[str, int] = ("rachel", 101),
    bot: bool = False,
    on_pull_request: bool = False,
    via_app: int | None = None,
    created_at: str = "2026-11-30T10:00:00Z",
    comment_id: int | None = None,
    repository: str = REPOSITORY,
) -> dict[str, Any]:
    """`issue_comment` `created`: a comment on an issue (or a PR, which GitHub sends as an issue)."""
    issue: dict[str, Any] = {"number": number}
    if on_pull_request:
        issue["pull_request"] = {"url": f"https://api.github.com/repos/{repository}/pulls/{number}"}
    written: dict[str, Any] = {
        "id": comment_id if comment_id is not None else next(_COMMENT_IDS),
        "body": body,
        "created_at": created_at,
        "user": user(*author, "Bot" if bot else "User"),
        "performed_via_github_app": {"id": via_app} if via_app is not None else None,
    }
    return _base("created", repository, issue=issue, comment=written, sender=user(*author))


def issue(
    action: str, number: int, *, labels: tuple[str, ...] = (), repository: str = REPOSITORY
) -> dict[str, Any]:
    """`issues` `opened`, `labeled`, `closed` or `reopened`."""
    state = "closed" if action == "closed" else "open"
    found = {"number": number, "state": state, "labels": [{"name": name} for name in labels]}
    return _base(action, repository, issue=found)


def pull_request(action: str, pull: dict[str, Any], *, repository: str = REPOSITORY) -> dict[str, Any]:
    """`pull_request` with the PR object (`tests.fakes.github.pull_answer` builds one)."""
    return _base(action, repository, number=pull["number"], pull_request=pull)


def check_run(
    head_sha: str,
    *,
    name: str = "tests",
    conclusion: str | None = "success",
    check_id: int = 501,
    completed_at: str = "2026-11-30T10:05:00Z",
) -> dict[str, Any]:
    """`check_run` `completed` (or still running, with `conclusion=None`)."""
    run = {
        "id": check_id,
        "name": name,
        "head_sha": head_sha,
        "status": "completed" if conclusion is not None else "in_progress",
        "conclusion": conclusion,
        "completed_at": completed_at if conclusion is not None else None,
        "started_at": "2026-11-30T10:01:00Z",
    }
    return _base("completed" if conclusion is not None else "created", check_run=run)


def push(branch: str, *, pushed_at: int = 1_800_000_100, head: str = "c" * 40) -> dict[str, Any]:
    """`push` to a branch of the repository."""
    payload = _base(None, ref=f"refs/heads/{branch}", after=head)
    payload["repository"]["pushed_at"] = pushed_at
    return payload


def deployment_status(
    deployment_id: int, sha: str, state: str, *, environment: str = "production", status_id: int = 0
) -> dict[str, Any]:
    """`deployment_status` `created`: a deployment reached a state."""
    deployment = {"id": deployment_id, "sha": sha, "environment": environment}
    status = {"id": status_id or deployment_id * 10, "state": state}
    return _base("created", deployment=deployment, deployment_status=status)


def deployment_protection_rule(
    sha: str,
    *,
    environment: str = "production",
    deployment_id: int | None = 900,
    run_id: int = 4242,
    callback_repository: str = REPOSITORY,
    api: str = "https://api.github.com",
    repository_id: int = REPOSITORY_ID,
) -> dict[str, Any]:
    """`deployment_protection_rule` `requested`: run `run_id` waits to deploy `sha` to `environment`
    (`deployment_id` None: the job creates no deployment, and GitHub sends `deployment: null`)."""
    deployment = (
        {"id": deployment_id, "sha": sha, "environment": environment} if deployment_id is not None else None
    )
    url = f"{api}/repos/{callback_repository}/actions/runs/{run_id}/deployment_protection_rule"
    payload = _base(
        "requested", environment=environment, event="push", sha=sha, ref="refs/heads/main",
        deployment_callback_url=url, deployment=deployment, pull_requests=[],
    )  # fmt: skip
    payload["repository"]["id"] = repository_id  # the gate keeps its approvals by it
    return payload


def merge_group(head_sha: str, head_ref: str) -> dict[str, Any]:
    """`merge_group` `checks_requested`: the merge queue built a commit."""
    return _base("checks_requested", merge_group={"head_sha": head_sha, "head_ref": head_ref})


def installation(action: str, installation_id: int, account: str, repositories: list[str]) -> dict[str, Any]:
    """`installation` (`created`, `suspend`, `deleted`...)."""
    return {
        "action": action,
        "installation": {"id": installation_id, "account": {"login": account}},
        "repositories": [{"full_name": name} for name in repositories],
        "sender": user("owner", 1),
    }


def installation_repositories(
    installation_id: int, *, added: tuple[str, ...] = (), removed: tuple[str, ...] = ()
) -> dict[str, Any]:
    """`installation_repositories`: repositories added to or removed from an installation."""
    return {
        "action": "added" if added else "removed",
        "installation": {"id": installation_id, "account": {"login": "acme"}},
        "repositories_added": [{"full_name": name} for name in added],
        "repositories_removed": [{"full_name": name} for name in removed],
    }
