"""What every part of the GitHub stand-in shares: constants, JSON aliases, ids, shas and times."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, is_dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

Json = dict[str, Any]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


HTML = "https://github.com"
DOCS = "https://docs.github.com/rest"
LIMITS_DOCS = f"{DOCS}/using-the-rest-api/rate-limits-for-the-rest-api"
SEEDED_AT = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)  # when seeded repositories, issues and pulls were made
DEFAULT_PERMISSIONS = {  # what railyard's app asks for; every installation also has metadata: read
    "actions": "read",
    "checks": "write",
    "contents": "read",
    "deployments": "write",
    "issues": "write",
    "members": "read",
    "metadata": "read",
    "pull_requests": "write",
}
ACCESS_LEVELS = ("none", "read", "write", "admin")  # an installation's grant, per permission
ROLES = ("none", "read", "triage", "write", "maintain", "admin")
REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")
CHECK_STATUSES = ("queued", "in_progress", "completed", "waiting", "requested", "pending")
CHECK_CONCLUSIONS = ("action_required", "cancelled", "failure", "neutral", "success", "skipped", "timed_out")
COMPARE_COUNTS = {"identical": (0, 0), "ahead": (1, 0), "behind": (0, 1), "diverged": (1, 1)}
SECONDARY_LIMIT = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID {}."
)


@dataclass
class RateBucket:
    """A credential's primary rate limit for the current hour."""

    limit: int
    remaining: int
    reset: datetime


def git_blob_sha(content: str | bytes) -> str:
    """The object id git gives a file: sha1 over b"blob <size>\\0" and the content."""
    data = content.encode() if isinstance(content, str) else content
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def iso(at: datetime) -> str:
    """A time as GitHub writes it: UTC, whole seconds, a Z."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def fake_jwt(app_id: int = 1) -> str:
    """A JWT-shaped app credential; the stand-in checks its shape, never its signature."""
    now = int(time.time())
    parts = [{"alg": "RS256", "typ": "JWT"}, {"iat": now - 60, "exp": now + 540, "iss": str(app_id)}]
    encoded = [json.dumps(part).encode() for part in parts] + [secrets.token_bytes(32)]
    return ".".join(base64.urlsafe_b64encode(part).rstrip(b"=").decode() for part in encoded)


def fake_sha(*parts: object) -> str:
    return hashlib.sha1(":".join(map(str, parts)).encode(), usedforsecurity=False).hexdigest()


def fork_id(full_name: str) -> int:
    """A fork's stable id (the `head.repo.id` of a PR from it), so payloads built anywhere in the
    tests agree with the stand-in's answers; never its parent's (`state.repository_id`)."""
    return int(fake_sha(full_name)[:8], 16)


def node_id_of(kind: str, key: object) -> str:
    return base64.b64encode(f"0{len(kind)}:{kind}{key}".encode()).decode()


def wall_clock() -> datetime:
    return datetime.now(UTC)


def parse_time(value: str | datetime) -> datetime:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def plain(value: Any) -> Any:
    def encode(obj: Any) -> Any:
        if isinstance(obj, datetime):
            return iso(obj)
        if is_dataclass(obj) and not isinstance(obj, type):
            return asdict(obj)
        raise TypeError(f"not JSON: {obj!r}")

    return json.loads(json.dumps(value, default=encode))


@dataclass
class ManualClock:
    """A settable clock; it moves `step` on each time something is created or edited."""

    at: datetime
    step: timedelta = timedelta(0)

    def __call__(self) -> datetime:
        return self.at
