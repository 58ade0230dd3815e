"""The three rails, the roles and the relations a ticket has with people."""

from __future__ import annotations

from enum import StrEnum


class WorkState(StrEnum):
    """Where the work stands, moved only by slash-commands that pass role checks."""

    DRAFT = "draft"
    OPEN = "open"
    CLAIMED = "claimed"
    DELIVERED = "delivered"
    ACCEPTED = "accepted"


class IntegrationState(StrEnum):
    """Where the code stands in the repository, moved only by repository events."""

    NOT_APPLICABLE = "not_applicable"
    UNREPORTED = "unreported"
    BRANCH_REPORTED = "branch_reported"
    PULL_REQUEST_OPEN = "pull_request_open"
    MERGED = "merged"
    BLOCKED = "blocked"


class DeploymentState(StrEnum):
    """Whether the merged change reached an environment, moved only by deployment events."""

    NOT_APPLICABLE = "not_applicable"
    NOT_DEPLOYED = "not_deployed"
    DEPLOYING = "deploying"
    DEPLOYED = "deployed"
    FAILED = "failed"


class Role(StrEnum):
    """A role granted by the repository's configuration (or its permission fallback)."""

    REQUESTER = "requester"
    TASK_OWNER = "task_owner"
    RUNNER = "runner"
    REVIEWER = "reviewer"
    REPOSITORY_MAINTAINER = "repository_maintainer"
    RELEASE_OWNER = "release_owner"


class Relation(StrEnum):
    """A relation a person has with one ticket, distinct from any role."""

    OWNER = "owner"
    CLAIMANT = "claimant"


class ReviewKind(StrEnum):
    """How an acceptance was reached; only `independent` is a review by someone else."""

    INDEPENDENT = "independent"
    SELF_VERIFIED = "self_verified"
    OVERRIDE = "override"


class SelfVerification(StrEnum):
    """The `self_verification` setting: whether `/accept --self` may be used at all."""

    EXPLICIT = "explicit"
    NEVER = "never"


Qualification = Role | Relation
"""What a transition row accepts: a role from configuration or a relation to the ticket."""
