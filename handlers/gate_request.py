"""A `deployment_protection_rule` request as the gate reads it (`handlers.gate`): which workflow
run waits to deploy which commit to which environment, and how its one answer is known."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

import structlog

from handlers.payloads import dig_int, dig_str
from handlers.routing import WebhookEvent

log = structlog.get_logger(__name__)

CALLBACK_PATH = re.compile(r"/repos/([^/]+)/([^/]+)/actions/runs/([0-9]{1,19})/deployment_protection_rule/?$")


@dataclass(frozen=True)
class ProtectionRequest:
    """One protection-rule request: which run waits to deploy which sha to which environment."""

    repository: str
    environment: str
    sha: str
    run_id: int
    deployment_id: int | None = None

    delivery_id: str = ""
    repository_id: int | None = None  # GitHub's id (every payload names it)

    @property
    def request(self) -> str:
        """What names this request among the run's: its deployment (a re-run asks again with a
        new one); without one, the run, the sha and the webhook delivery (a re-run of the job in
        the same run is a new delivery; GitHub's redelivery of this one is the same)."""
        if self.deployment_id is not None:
            return str(self.deployment_id)
        return f"run-{self.run_id}@{self.sha}#{self.delivery_id}"

    def answered_as(self) -> tuple[int, str, str, str] | None:
        """The request as its kept answer is keyed (`gate_approvals`: GitHub's repository id, the
        environment casefolded, the sha, the request), which a rename does not change."""
        if self.repository_id is None:
            return None
        return (self.repository_id, self.environment.casefold(), self.sha.lower(), self.request)

    def answer_key(self) -> str:
        """The key of GitHub's one answer to this request (`DeploymentReview`)."""
        return f"{self.repository.casefold()}:{self.run_id}:{self.environment}:{self.request}"


def run_of(callback_url: str | None, repository: str) -> int | None:
    """The workflow run a callback URL names, when it is this repository's; None otherwise."""
    if not callback_url:
        return None
    found = CALLBACK_PATH.search(urlsplit(callback_url).path)
    if found is None or f"{found.group(1)}/{found.group(2)}".casefold() != repository.casefold():
        return None
    return int(found.group(3))


def request_from(event: WebhookEvent) -> ProtectionRequest | None:
    """The request a `deployment_protection_rule` payload makes, if it is well formed."""
    payload = event.payload
    repository = dig_str(payload, "repository", "full_name")
    environment = dig_str(payload, "environment")
    sha = dig_str(payload, "deployment", "sha") or dig_str(payload, "sha")
    if repository is None or environment is None or sha is None:
        return None
    run_id = run_of(dig_str(payload, "deployment_callback_url"), repository)
    if run_id is None:
        log.warning("deployment_protection_rule_without_a_callback_of_this_repository")
        return None
    deployment_id = dig_int(payload, "deployment", "id")
    return ProtectionRequest(
        repository, environment, sha, run_id, deployment_id, event.delivery_id,
        dig_int(payload, "repository", "id"),
    )  # fmt: skip
