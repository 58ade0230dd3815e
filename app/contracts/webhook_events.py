"""The webhook events railyard subscribes to, and those GitHub sends unasked."""

from __future__ import annotations

SUBSCRIBED_EVENTS = (
    "issue_comment",
    "issues",
    "pull_request",
    "push",
    "check_suite",
    "check_run",
    "deployment",
    "deployment_status",
    "merge_group",
    "repository",
    "deployment_protection_rule",
)
"""The events the app subscribes to (installation events arrive without subscribing, and ping)."""
UNLISTED_EVENTS = ("installation", "installation_repositories", "ping")
