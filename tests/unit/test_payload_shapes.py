"""Each event's payload shape: every real example has its own event's shape and no other's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.contracts.webhook_payloads import SHAPES, SUBSCRIBED_EVENTS, UNLISTED_EVENTS, WebhookBody
from app.contracts.webhook_payloads import mismatch as mismatch_of
from tests.fakes import FIXTURES

EXAMPLES = sorted(FIXTURES.glob("*/*/*.json"))


def _load(path: Path) -> Any:
    return json.loads(path.read_bytes())


def mismatch(event: str, payload: Any) -> str | None:
    """The intake's verdict on `payload` sent as a body."""
    return mismatch_of(event, WebhookBody(json.dumps(payload).encode()))


def test_every_subscribed_and_unlisted_event_has_a_shape() -> None:
    """No event railyard handles goes unchecked."""
    assert set(SHAPES) == {*SUBSCRIBED_EVENTS, *UNLISTED_EVENTS}


def test_the_examples_cover_every_event() -> None:
    """@octokit/webhooks-examples (github.com and GHES 3.1-3.5) has examples of each shaped event;
    it has none of `deployment_protection_rule`, whose one example is built from @octokit/openapi's
    `webhook-deployment-protection-rule-requested` schema around the `deployment` example's objects."""
    # 231, the 13 `repository` examples (renamed, transferred, ...) and the protection rule's.
    assert len(EXAMPLES) == 245
    assert {path.parent.name for path in EXAMPLES} == set(SHAPES)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}/{p.name}")
def test_a_real_payload_has_the_shape_of_its_own_event_and_of_no_other(path: Path) -> None:
    """No real payload is rejected, and none passes for another event (so none can be replayed as one)."""
    payload, event = _load(path), path.parent.name
    assert mismatch(event, payload) is None
    passes_as = [other for other in SHAPES if other != event and mismatch(other, payload) is None]
    assert passes_as == []


def test_a_comment_payload_posted_as_an_installation_event_lacks_the_account() -> None:
    """The replay of issue 12: an `issue_comment.deleted` body under `installation`."""
    comment = _load(FIXTURES / "api.github.com" / "issue_comment" / "06-deleted.json")
    comment["installation"] = {"id": 7, "node_id": "MDIz"}
    assert mismatch("installation", comment) == "installation payload lacks installation.account"


def test_a_payload_carrying_another_events_key_is_named() -> None:
    """A key of another event betrays the body, and the reason names the key, not its value."""
    payload = _load(FIXTURES / "api.github.com" / "issues" / "01-edited.json")
    payload["comment"] = {"body": "do not log me"}
    reason = mismatch("issues", payload)
    assert reason == "issues payload carries comment, which belongs to another event"


@pytest.mark.parametrize("value", [None, "12", True, [], {"number": 12}])
def test_a_key_of_the_wrong_type_reads_as_missing(value: Any) -> None:
    """`number` must be an integer (a boolean is not one); anything else is a mismatch."""
    payload = _load(FIXTURES / "api.github.com" / "pull_request" / "01-opened.json")
    payload["number"] = value
    assert mismatch("pull_request", payload) == "pull_request payload lacks number"


def test_an_event_railyard_does_not_know_is_not_checked() -> None:
    """Unknown events are stored as ignored and never processed, so they need no shape."""
    assert mismatch("star", {"action": "created"}) is None


def test_a_deployment_protection_rule_does_not_pass_for_a_deployment() -> None:
    """An event railyard does not subscribe to, but that carries a `deployment`, is told apart."""
    rule = {
        "action": "requested",
        "environment": "production",
        "event": "push",
        "deployment_callback_url": "https://api.github.com/repos/acme/web/actions/runs/1/deployment_protection_rule",
        "deployment": {"id": 1, "sha": "f" * 40, "environment": "production"},
        "repository": {"full_name": "acme/web"},
        "sender": {"id": 1, "login": "octocat"},
    }
    assert mismatch("deployment", rule) == (
        "deployment payload carries deployment_callback_url, which belongs to another event"
    )
