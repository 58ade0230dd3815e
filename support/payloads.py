"""Real webhook payloads from `@octokit/webhooks-examples`, as stored under tests/fixtures."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "webhooks"


def example(host: str, event: str, name: str) -> bytes:
    """A real payload from `@octokit/webhooks-examples`, as stored under tests/fixtures."""
    return (FIXTURES / host / event / name).read_bytes()
