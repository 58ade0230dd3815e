"""`app.yml` grants exactly what the code needs and subscribes to exactly what it handles."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.contracts.webhook_payloads import SUBSCRIBED_EVENTS, UNLISTED_EVENTS
from app.github.endpoints import ENDPOINTS
from app.web.manifest import (
    EVENT_PERMISSIONS,
    ManifestError,
    github_web_url,
    load_manifest,
    manifest_for,
    registration_url,
    required_permissions,
)
from handlers import ROUTER

MANIFEST = load_manifest()
ENDPOINT_NEEDS = [endpoint.permission for endpoint in ENDPOINTS.values() if endpoint.permission is not None]


def test_the_manifest_grants_exactly_what_the_endpoints_and_events_need() -> None:
    """The union of the endpoints' permissions and the events' permissions, nothing more."""
    needed = required_permissions(ENDPOINT_NEEDS, MANIFEST["default_events"])
    assert MANIFEST["default_permissions"] == needed


def test_the_manifest_grants_the_permissions_spec_lists() -> None:
    """SPEC's list, so a change to the code that widens the grant is a visible decision."""
    assert MANIFEST["default_permissions"] == {
        "issues": "write",
        "pull_requests": "write",
        "checks": "write",
        "contents": "read",
        "deployments": "write",
        "actions": "read",
        "merge_queues": "read",
        "metadata": "read",
        "members": "read",
        "organization_projects": "write",
    }


def test_the_manifest_subscribes_to_exactly_the_events_the_router_handles() -> None:
    """Installation events and ping arrive without subscribing; GitHub refuses them in a manifest."""
    handled = ROUTER.events - set(UNLISTED_EVENTS)
    subscribed = set(MANIFEST["default_events"])
    assert not subscribed - handled, f"subscribed but no handler registered: {sorted(subscribed - handled)}"
    assert not handled - subscribed, f"handled but not subscribed in app.yml: {sorted(handled - subscribed)}"


def test_the_manifest_events_are_the_ones_intake_expects() -> None:
    """The intake's list of subscribed events and app.yml agree, and none is unlisted-only."""
    assert set(MANIFEST["default_events"]) == set(SUBSCRIBED_EVENTS)
    assert not set(MANIFEST["default_events"]) & set(UNLISTED_EVENTS)


def test_every_subscribed_event_has_a_known_permission() -> None:
    """An event missing from EVENT_PERMISSIONS would make the grant check meaningless."""
    assert set(MANIFEST["default_events"]) <= set(EVENT_PERMISSIONS)


def test_a_write_level_covers_read_of_the_same_permission() -> None:
    """issues write plus an issues event needs only issues write."""
    assert required_permissions([("issues", "read"), ("issues", "write")], ["issues"]) == {"issues": "write"}
    assert required_permissions([], ["merge_group", "deployment"]) == {
        "merge_queues": "read",
        "deployments": "read",
    }


def test_the_deployment_gate_asks_for_actions_read_and_deployments_write() -> None:
    """GitHub's custom deployment protection rules need Actions read-only besides the event's
    Deployments permission; the answer (an endpoint) needs Deployments write."""
    needed = required_permissions([("deployments", "write")], ["deployment_protection_rule"])
    assert needed == {"deployments": "write", "actions": "read"}
    assert "deployment_protection_rule" in MANIFEST["default_events"]


def test_the_posted_manifest_points_its_urls_at_public_url() -> None:
    """Webhook, redirect and home page URLs all come from PUBLIC_URL (a trailing slash is dropped)."""
    filled = manifest_for("https://railyard.example.com/", MANIFEST)
    assert filled["url"] == "https://railyard.example.com"
    assert filled["hook_attributes"] == {"url": "https://railyard.example.com/webhooks", "active": True}
    assert filled["redirect_url"] == "https://railyard.example.com/setup/callback"
    assert filled["default_permissions"] == MANIFEST["default_permissions"]


def test_the_web_host_is_derived_from_the_api_url() -> None:
    """github.com for api.github.com; the same host for GitHub Enterprise Server's /api/v3."""
    assert github_web_url("https://api.github.com") == "https://github.com"
    assert github_web_url("https://ghe.example.com/api/v3/") == "https://ghe.example.com"


def test_the_registration_url_carries_the_state_and_the_organization() -> None:
    """A personal registration by default, an organization's when one is named."""
    assert (
        registration_url("https://api.github.com", "s t")
        == "https://github.com/settings/apps/new?state=s%20t"
    )
    assert (
        registration_url("https://ghe.example.com/api/v3", "abc", "my-org")
        == "https://ghe.example.com/organizations/my-org/settings/apps/new?state=abc"
    )


def test_an_organization_name_that_is_not_one_is_refused() -> None:
    """The name goes into a URL path, so only GitHub's login characters are accepted."""
    with pytest.raises(ManifestError):
        registration_url("https://api.github.com", "abc", "../evil")


def test_an_unreadable_manifest_is_reported_with_its_path(tmp_path: Path) -> None:
    """A clear error instead of a KeyError later."""
    broken = tmp_path / "app.yml"
    broken.write_text("name: railyard\n")
    with pytest.raises(ManifestError, match="default_permissions"):
        load_manifest(broken)
