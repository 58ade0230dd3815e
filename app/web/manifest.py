"""The GitHub App manifest (`app.yml`): reading it, what it must grant, and where to post it.

GitHub registers an app from a manifest posted by a browser form to
`https://github.com/settings/apps/new` (or an organization's page); see
https://docs.github.com/en/apps/sharing-github-apps/registering-a-github-app-from-a-manifest
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any
from urllib.parse import quote, urlsplit

import yaml

# Read as a package resource, so a plain wheel install finds it; the repository root's app.yml
# (the one GitHub and the README show) is kept identical by tests/unit/test_packaging.py.
MANIFEST = files("app.web").joinpath("app.yml")

EVENT_PERMISSIONS: dict[str, str] = {
    "issue_comment": "issues",
    "issues": "issues",
    "pull_request": "pull_requests",
    "push": "contents",
    "check_suite": "checks",
    "check_run": "checks",
    "deployment": "deployments",
    "deployment_status": "deployments",
    "merge_group": "merge_queues",
    "repository": "metadata",
    "deployment_protection_rule": "deployments",
}
"""The permission (read level suffices) without which GitHub will not deliver each event.

From GitHub's "Webhook events and payloads" page
(https://docs.github.com/en/webhooks/webhook-events-and-payloads), which says for each event
"to subscribe to this event, a GitHub App must have at least read-level access for the ...
permission". GitHub refuses a manifest that subscribes to an event no permission covers.
"""

EVENT_EXTRA_PERMISSIONS: dict[str, tuple[str, str]] = {
    "deployment_protection_rule": ("actions", "read"),
}
"""Permissions an event's feature needs beyond its own: GitHub's "Creating custom deployment
protection rules" asks the app for Actions read-only (the rule gates workflow runs) besides
Deployments read and write (the answer itself, `app.github.endpoints`)."""

LEVELS = {"read": 1, "write": 2}
ORGANIZATION_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")


class ManifestError(ValueError):
    """The manifest cannot be read or completed; the message says why."""


def load_manifest(path: Traversable = MANIFEST) -> dict[str, Any]:
    """`app.yml` as a dict, checked to hold permissions and events."""
    try:
        manifest = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise ManifestError(f"cannot read the app manifest {path}: {error}") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("default_permissions"), dict):
        raise ManifestError(f"{path} has no default_permissions mapping")
    if not isinstance(manifest.get("default_events"), list):
        raise ManifestError(f"{path} has no default_events list")
    return manifest


def required_permissions(needs: Iterable[tuple[str, str]], events: Iterable[str] = ()) -> dict[str, str]:
    """The least permissions covering every `(permission, level)` and every event's permission.

    A write level covers read of the same permission.
    """
    granted: dict[str, str] = {}
    events = list(events)
    extra = [EVENT_EXTRA_PERMISSIONS[event] for event in events if event in EVENT_EXTRA_PERMISSIONS]
    for permission, level in [*needs, *((EVENT_PERMISSIONS[event], "read") for event in events), *extra]:
        if LEVELS[level] > LEVELS.get(granted.get(permission, ""), 0):
            granted[permission] = level
    return granted


def manifest_for(public_url: str, manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest to post: `manifest` with its URLs pointing at `public_url`; the sign-in's
    callback among `callback_urls`, since GitHub sends a person back only to one of those."""
    base = public_url.rstrip("/")
    return {
        **manifest,
        "url": base,
        "hook_attributes": {"url": f"{base}/webhooks", "active": True},
        "redirect_url": f"{base}/setup/callback",
        "callback_urls": [f"{base}/login/callback"],
    }


def github_web_url(api_url: str) -> str:
    """GitHub's web address for an API URL: github.com, or a GitHub Enterprise Server host."""
    parts = urlsplit(api_url.rstrip("/"))
    if parts.hostname == "api.github.com":
        return "https://github.com"
    path = parts.path.removesuffix("/api/v3")
    return f"{parts.scheme}://{parts.netloc}{path}"


def registration_url(api_url: str, state: str, organization: str | None = None) -> str:
    """Where the setup form posts the manifest: the account's or the organization's new-app page."""
    if organization is not None and not ORGANIZATION_NAME.match(organization):
        raise ManifestError(f"not a GitHub organization name: {organization!r}")
    owner = f"/organizations/{organization}" if organization else ""
    return f"{github_web_url(api_url)}{owner}/settings/apps/new?state={quote(state, safe='')}"
