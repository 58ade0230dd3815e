"""The one GitHub stand-in: answers railyard's REST calls over loopback as api.github.com does.

Status codes, headers and JSON shapes follow GitHub's OpenAPI description, so githubkit parses
every answer. State lives in memory, every call is recorded, and faults are injected per request.

In-process::

    async with running_standin() as standin:
        standin.state.add_installation(7, "acme")
        standin.state.add_repository("acme/widgets", {"railyard.yml": "..."})

As a subprocess, seeded and inspected over HTTP under /_standin/::

    python -m tests.github_standin --port 0 --port-file PATH [--seed seed.json]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import itertools
import json
import random
import re
import secrets
import signal
import subprocess
import sys
import time
import uuid
import zlib
from collections import Counter, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import asdict, dataclass, field, is_dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from string import Template
from typing import Any

import httpx
from aiohttp import web

Json = dict[str, Any]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

ROOT = Path(__file__).resolve().parents[1]
HTML = "https://github.com"
DOCS = "https://docs.github.com/rest"
LIMITS_DOCS = f"{DOCS}/using-the-rest-api/rate-limits-for-the-rest-api"
SEEDED_AT = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)  # when seeded repositories, issues and pulls were made
DEFAULT_PERMISSIONS = {  # what railyard's app asks for; every installation also has metadata: read
    "checks": "write",
    "contents": "read",
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


def _fake_sha(*parts: object) -> str:
    return hashlib.sha1(":".join(map(str, parts)).encode(), usedforsecurity=False).hexdigest()


def _node_id(kind: str, key: object) -> str:
    return base64.b64encode(f"0{len(kind)}:{kind}{key}".encode()).decode()


def _wall_clock() -> datetime:
    return datetime.now(UTC)


# --- state ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    """One injected failure, consumed by one matching request.

    `apply_then_fail` performs the request's effect, then answers `status`; `apply_then_timeout`
    performs it and answers only after `delay` seconds, past the client's timeout;
    `apply_then_drop` performs it and closes the connection without an answer. All three are
    the ambiguous failures a client must survive without doing things twice.
    """

    status: int = 500
    retry_after: int | None = None
    secondary_rate_limit: bool = False
    primary_rate_limit: bool = False
    apply_then_fail: bool = False
    apply_then_timeout: bool = False
    delay: float = 0.0
    apply_then_drop: bool = False


@dataclass
class RandomFaults:
    """Faults drawn at random for every GitHub request (the chaos benchmark's GitHub).

    Each request draws once: with probability `server_error` a 5xx before any effect; for a
    write (POST, PATCH), with `error_after_effect` a 502 after the effect, with
    `drop_after_effect` the connection closed after it, with `timeout_after_effect` an
    answer only after `stall_seconds` (past the client's timeout); with `secondary_limit` a
    403 secondary rate limit with a Retry-After of `retry_after` seconds (a range).
    `injected` counts what was injected, by kind; `enabled` turns the lot off.
    """

    server_error: float = 0.0
    error_after_effect: float = 0.0
    drop_after_effect: float = 0.0
    timeout_after_effect: float = 0.0
    secondary_limit: float = 0.0
    retry_after: tuple[int, int] = (2, 5)
    stall_seconds: float = 16.0
    seed: int | None = None
    enabled: bool = True
    injected: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def draw(self, method: str, path: str) -> Fault | None:
        """The fault for one request, or None.

        Installation tokens are only ever failed with a 5xx: that request is made inside the
        client library's authentication, not by the code under test.
        """
        if not self.enabled:
            return None
        token = path.endswith("/access_tokens")
        write = method in ("POST", "PATCH") and not token
        kinds: list[tuple[str, float, Fault]] = [
            ("5xx", self.server_error, Fault(status=self._rng.choice((500, 502, 503)))),
        ]
        if not token:
            limit = Fault(
                status=403, secondary_rate_limit=True, retry_after=self._rng.randint(*self.retry_after)
            )
            kinds.append(("403 secondary limit", self.secondary_limit, limit))
        if write:
            kinds += [
                ("5xx after effect", self.error_after_effect, Fault(status=502, apply_then_fail=True)),
                ("dropped after effect", self.drop_after_effect, Fault(apply_then_drop=True)),
                ("timeout after effect", self.timeout_after_effect, Fault(
                    apply_then_timeout=True, delay=self.stall_seconds
                )),
            ]  # fmt: skip
        roll = self._rng.random()
        for kind, probability, fault in kinds:
            if roll < probability:
                self.injected[kind] += 1
                return fault
            roll -= probability
        return None


@dataclass
class LimitWatch:
    """Remembers every Retry-After the stand-in answered, and the calls that came in before
    it ran out (GitHub bans integrations that keep calling through a secondary limit).

    A call counts as ignoring the limit only if it arrives `grace` seconds or more after the
    403 was sent, so requests already in flight when it was answered do not count.
    """

    grace: float = 1.0
    limits: dict[int | None, tuple[float, float]] = field(default_factory=dict)  # sent at, until
    # (installation, method, path, seconds since the 403, seconds it had still to run)
    ignored: list[tuple[int | None, str, str, float, float]] = field(default_factory=list)

    def limited(self, installation_id: int | None, retry_after: int) -> None:
        now = time.monotonic()
        self.limits[installation_id] = (now, now + retry_after)

    def arrived(self, installation_id: int | None, method: str, path: str) -> None:
        sent, until = self.limits.get(installation_id, (0.0, 0.0))
        now = time.monotonic()
        if sent + self.grace <= now < until:
            self.ignored.append((installation_id, method, path, round(now - sent, 2), round(until - now, 2)))


@dataclass
class Call:
    """One request as received; `auth` is "jwt", "installation", "none" or "invalid"."""

    method: str
    path: str
    query: dict[str, str]
    body: Any
    auth: str
    installation_id: int | None
    at: datetime
    status: int = 0


@dataclass
class Installation:
    id: int
    account: str
    permissions: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_PERMISSIONS))
    account_type: str = "Organization"


@dataclass
class Issue:
    number: int
    title: str = "An issue"
    body: str | None = ""
    labels: list[str] = field(default_factory=list)
    assignees: list[str] = field(default_factory=list)
    state: str = "open"
    user: str = "octocat"


@dataclass
class PullRequest:
    number: int
    head_sha: str = ""
    head_ref: str = "feature"
    base_ref: str = "main"
    state: str = "open"
    merged: bool = False
    merge_commit_sha: str | None = None
    mergeable: bool | None = True
    body: str | None = ""
    user: str = "octocat"
    title: str = "A pull request"
    # The head branch's repository: "" is the PR's own, "owner/name" a fork, None a deleted fork.
    head_repo: str | None = ""


@dataclass
class Repository:
    full_name: str
    default_branch: str = "main"
    files: dict[str, str] = field(default_factory=dict)  # path -> text, on the default branch
    branches: dict[str, str] = field(default_factory=dict)  # name -> head sha
    issues: dict[int, Issue] = field(default_factory=dict)
    pulls: dict[int, PullRequest] = field(default_factory=dict)
    compare: dict[tuple[str, str], str] = field(default_factory=dict)  # (base, head) -> status
    commits: set[str] = field(default_factory=set)  # older commits, beyond branch and PR heads
    # Issues transferred away: number -> (id of the repository it went to, its number there).
    transferred: dict[int, tuple[int, int]] = field(default_factory=dict)
    private: bool = False
    id: int = 0

    def __post_init__(self) -> None:
        self.branches.setdefault(self.default_branch, _fake_sha(self.full_name, self.default_branch))
        self.id = self.id or int(_fake_sha(self.full_name)[:7], 16)

    def resolve(self, ref: str) -> str | None:
        """The commit a branch name or a full sha names, or None."""
        return self.branches.get(ref) or (ref if re.fullmatch(r"[0-9a-f]{40}", ref) else None)


@dataclass
class Comment:
    id: int
    repo: str
    issue_number: int
    body: str
    user: str
    user_type: str = "User"
    app_id: int | None = None  # performed_via_github_app
    created_at: datetime = SEEDED_AT
    updated_at: datetime = SEEDED_AT


@dataclass
class Reaction:
    id: int
    comment_id: int
    content: str
    user: str
    created_at: datetime


@dataclass
class CheckRun:
    id: int
    repo: str
    name: str
    head_sha: str
    status: str = "queued"
    conclusion: str | None = None
    output: dict[str, str | None] = field(default_factory=lambda: dict.fromkeys(("title", "summary", "text")))
    details_url: str | None = None
    external_id: str | None = None
    started_at: datetime | None = None
    completed_at: datetime | None = None


@dataclass
class Delivery:
    id: int
    guid: str
    delivered_at: datetime
    event: str
    action: str | None = None
    redelivery: bool = False
    duration: float = 0.05
    status: str = "OK"
    status_code: int = 200
    installation_id: int | None = None
    repository_id: int | None = None


@dataclass
class Token:
    token: str
    installation_id: int
    expires_at: datetime


@dataclass
class ManualClock:
    """A settable clock; it moves `step` on each time something is created or edited."""

    at: datetime
    step: timedelta = timedelta(0)

    def __call__(self) -> datetime:
        return self.at


@dataclass
class RateBucket:
    limit: int
    remaining: int
    reset: datetime


def account_id(login: str) -> int:
    """A stable user id for a login, so payloads built anywhere in the tests agree with the stand-in."""
    return 10_000 + zlib.crc32(login.casefold().encode()) % 90_000_000


@dataclass
class StandinState:
    """Everything the stand-in knows, the record of calls, and the queued faults."""

    app_slug: str = "railyard"
    app_id: int = 1
    installations: dict[int, Installation] = field(default_factory=dict)
    repositories: dict[str, Repository] = field(default_factory=dict)
    comments: dict[int, Comment] = field(default_factory=dict)
    reactions: list[Reaction] = field(default_factory=list)
    check_runs: dict[int, CheckRun] = field(default_factory=dict)
    team_memberships: dict[tuple[str, str, str], str] = field(default_factory=dict)  # (org, team, login)
    permissions: dict[tuple[str, str], str] = field(default_factory=dict)  # (repo, login) -> role
    deliveries: list[Delivery] = field(default_factory=list)
    redelivery_attempts: list[int] = field(default_factory=list)
    tokens: dict[str, Token] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    rate_limit: int = 5000
    clock: Callable[[], datetime] = _wall_clock
    faults: list[tuple[str, re.Pattern[str], deque[Fault]]] = field(default_factory=list)
    buckets: dict[str, RateBucket] = field(default_factory=dict)
    random_faults: RandomFaults | None = None  # off unless set: see RandomFaults
    limit_watch: LimitWatch | None = None  # off unless set: see LimitWatch
    # Called with each write (POST, PATCH) GitHub performed, before the client hears of it.
    after_write: Callable[[Call], None] | None = None
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1_000_001), repr=False)
    _user_ids: dict[str, int] = field(default_factory=dict, repr=False)

    def now(self) -> datetime:
        return self.clock()

    def stamp(self) -> datetime:
        """The time for a new or edited object; a manual clock then moves on by its step."""
        at = self.clock()
        if isinstance(self.clock, ManualClock):
            self.clock.at += self.clock.step
        return at

    def set_clock(self, at: datetime, step_seconds: float = 0.0) -> None:
        """Freeze time at `at`; each creation or edit then moves it `step_seconds` on."""
        self.clock = ManualClock(at, timedelta(seconds=step_seconds))

    def advance(self, seconds: float) -> None:
        """Move time forward (freezing the wall clock first)."""
        if not isinstance(self.clock, ManualClock):
            self.set_clock(self.now())
        assert isinstance(self.clock, ManualClock)
        self.clock.at += timedelta(seconds=seconds)

    def next_id(self) -> int:
        return next(self._ids)

    def user_id(self, login: str) -> int:
        """The account behind a login (logins are case-insensitive; the id is what stays)."""
        return self._user_ids.setdefault(login.casefold(), account_id(login))

    def rename_user(self, old: str, new: str) -> None:
        """The account behind `old` is now called `new`; `old` is free for anyone to register."""
        self._user_ids[new.casefold()] = self.user_id(old)
        del self._user_ids[old.casefold()]

    def register_user(self, login: str) -> int:
        """A new account takes `login` (freed by a rename): a new id behind the same login."""
        self._user_ids[login.casefold()] = new = self.next_id()
        return new

    @property
    def bot_login(self) -> str:
        return f"{self.app_slug}[bot]"

    def inject(self, method: str, path_regex: str, *faults: Fault) -> None:
        """Queue faults for requests with this method ("*": any) whose path matches (re.search)."""
        self.faults.append((method.upper(), re.compile(path_regex), deque(faults)))

    def take_fault(self, method: str, path: str) -> Fault | None:
        for wanted, pattern, queued in self.faults:
            if queued and wanted in ("*", method) and pattern.search(path):
                return queued.popleft()
        return None

    def random_fault(self, method: str, path: str) -> Fault | None:
        """A fault drawn from `random_faults`, when set."""
        return self.random_faults.draw(method, path) if self.random_faults is not None else None

    def calls_to(self, method: str, path_prefix: str) -> list[Call]:
        """The recorded calls with this method whose path starts with `path_prefix`."""
        return [c for c in self.calls if c.method == method.upper() and c.path.startswith(path_prefix)]

    def bucket(self, key: str) -> RateBucket:
        """A credential's rate-limit bucket, refilled once its hour is over."""
        now, bucket = self.now(), self.buckets.get(key)
        if bucket is None or now >= bucket.reset:
            limit = 60 if key == "anonymous" else self.rate_limit
            bucket = self.buckets[key] = RateBucket(limit, limit, now + timedelta(hours=1))
        return bucket

    def add_installation(self, id: int, account: str, **fields: Any) -> Installation:
        installation = self.installations[id] = Installation(id, account, **fields)
        return installation

    def installation_for(self, owner: str) -> Installation | None:
        return next((i for i in self.installations.values() if i.account.lower() == owner.lower()), None)

    def issue_token(self, installation_id: int) -> str:
        """A new installation token, valid for an hour."""
        token = Token(f"ghs_{secrets.token_hex(18)}", installation_id, self.now() + timedelta(hours=1))
        self.tokens[token.token] = token
        return token.token

    def add_repository(
        self, full_name: str, files: dict[str, str] | None = None, **fields: Any
    ) -> Repository:
        repository = self.repositories[full_name] = Repository(full_name, files=dict(files or {}), **fields)
        return repository

    def repository(self, full_name: str) -> Repository | None:
        """A repository by name; as on GitHub, case does not matter."""
        return next((r for n, r in self.repositories.items() if n.lower() == full_name.lower()), None)

    def add_issue(self, repo: str, number: int, **fields: Any) -> Issue:
        issue = self.repositories[repo].issues[number] = Issue(number, **fields)
        return issue

    def transfer_issue(self, repo: str, number: int, to_repo: str, new_number: int) -> Issue:
        """Move an issue to another repository, as GitHub's "Transfer issue" does: the old
        address answers 301 with the new one from then on."""
        source, target = self.repositories[repo], self.repositories[to_repo]
        issue = source.issues.pop(number)
        issue.number = new_number
        target.issues[new_number] = issue
        source.transferred[number] = (target.id, new_number)
        return issue

    def add_pull(self, repo: str, number: int, **fields: Any) -> PullRequest:
        pull = self.repositories[repo].pulls[number] = PullRequest(number, **fields)
        pull.head_sha = pull.head_sha or _fake_sha(repo, "pull", number)
        return pull

    def add_comment(
        self, repo: str, number: int, body: str, user: str = "octocat", user_type: str = "User"
    ) -> Comment:
        """A comment made now (by a person, unless `user_type` is "Bot")."""
        at = self.stamp()
        comment = Comment(self.next_id(), repo, number, body, user, user_type, None, at, at)
        self.comments[comment.id] = comment
        return comment

    def add_delivery(self, event: str, **fields: Any) -> Delivery:
        at = fields.pop("delivered_at", None) or self.stamp()
        fields.setdefault("guid", str(uuid.uuid4()))
        delivery = Delivery(
            fields.pop("id", None) or self.next_id(), delivered_at=_time(at), event=event, **fields
        )
        self.deliveries.append(delivery)
        return delivery

    def seed(self, data: Json) -> None:
        """Add what a JSON document describes: the body POST /_standin/state takes."""
        self.app_slug = data.get("app", {}).get("slug", self.app_slug)
        self.app_id = data.get("app", {}).get("id", self.app_id)
        if "now" in data:
            self.set_clock(_time(data["now"]), data.get("clock_step", 0.0))
        for item in data.get("installations", []):
            self.add_installation(**item)
        for item in data.get("repositories", []):
            item = dict(item)
            issues, pulls, compare = (item.pop(key, []) for key in ("issues", "pulls", "compare"))
            repository = self.add_repository(**item)
            for issue in issues:
                self.add_issue(repository.full_name, **issue)
            for pull in pulls:
                self.add_pull(repository.full_name, **pull)
            repository.compare.update({(c["base"], c["head"]): c["status"] for c in compare})
        self.team_memberships.update(
            {(m["org"], m["team"], m["login"]): m["state"] for m in data.get("team_memberships", [])}
        )
        self.permissions.update(
            {(p["repo"], p["login"]): p["permission"] for p in data.get("permissions", [])}
        )
        for item in data.get("comments", []):
            self.add_comment(**item)
        for item in data.get("deliveries", []):
            self.add_delivery(**item)

    def snapshot(self) -> Json:
        """What has been done to GitHub, as JSON (GET /_standin/state)."""
        issues = {name: list(r.issues.values()) for name, r in self.repositories.items()}
        return _plain(  # type: ignore[no-any-return]
            {
                "comments": list(self.comments.values()),
                "reactions": self.reactions,
                "check_runs": list(self.check_runs.values()),
                "issues": issues,
                "deliveries": self.deliveries,
                "redelivery_attempts": self.redelivery_attempts,
            }
        )


def _time(value: str | datetime) -> datetime:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def _plain(value: Any) -> Any:
    def encode(obj: Any) -> Any:
        if isinstance(obj, datetime):
            return iso(obj)
        if is_dataclass(obj) and not isinstance(obj, type):
            return asdict(obj)
        raise TypeError(f"not JSON: {obj!r}")

    return json.loads(json.dumps(value, default=encode))


# --- GitHub's JSON shapes -------------------------------------------------------------------------
# Written as GitHub documents them. `$name`s take ids, logins, refs and URLs; free text and nullable
# values are merged in afterwards, so the JSON stays valid whatever they hold.


_USER = """{
    "login": "$login", "id": $id, "node_id": "$node_id", "type": "$type", "site_admin": false,
    "avatar_url": "https://avatars.githubusercontent.com/u/$id?v=4", "gravatar_id": "",
    "html_url": "$html_url",
    "url": "$api/users/$login", "followers_url": "$api/users/$login/followers",
    "following_url": "$api/users/$login/following{/other_user}",
    "gists_url": "$api/users/$login/gists{/gist_id}",
    "starred_url": "$api/users/$login/starred{/owner}{/repo}",
    "subscriptions_url": "$api/users/$login/subscriptions",
    "organizations_url": "$api/users/$login/orgs", "repos_url": "$api/users/$login/repos",
    "events_url": "$api/users/$login/events{/privacy}",
    "received_events_url": "$api/users/$login/received_events"}"""
_APP = """{
    "id": $id, "slug": "$slug", "node_id": "$node_id", "name": "$name", "description": "",
    "external_url": "https://$slug.example", "html_url": "https://github.com/apps/$slug",
    "created_at": "$seeded", "updated_at": "$seeded",
    "events": ["check_run", "issue_comment", "issues", "pull_request", "push"]}"""
_INSTALLATION = """{
    "id": $id, "app_id": $app_id, "app_slug": "$app_slug", "target_id": $target_id, "target_type": "$type",
    "access_tokens_url": "$api/app/installations/$id/access_tokens", "repository_selection": "all",
    "repositories_url": "$api/installation/repositories", "created_at": "$seeded", "updated_at": "$seeded",
    "html_url": "https://github.com/settings/installations/$id",
    "events": ["check_run", "issue_comment", "issues", "pull_request", "push"],
    "single_file_name": null, "suspended_by": null, "suspended_at": null}"""
_REPOSITORY = """{
    "id": $id, "node_id": "$node_id", "name": "$name", "full_name": "$full_name", "private": $private,
    "visibility": "$visibility", "default_branch": "$default_branch", "open_issues": $open_issues,
    "open_issues_count": $open_issues, "pushed_at": "$seeded", "created_at": "$seeded",
    "updated_at": "$seeded",
    "html_url": "https://github.com/$full_name", "clone_url": "https://github.com/$full_name.git",
    "git_url": "git://github.com/$full_name.git", "ssh_url": "git@github.com:$full_name.git",
    "svn_url": "https://github.com/$full_name", "url": "$url", "archive_url": "$url/{archive_format}{/ref}",
    "assignees_url": "$url/assignees{/user}", "blobs_url": "$url/git/blobs{/sha}",
    "branches_url": "$url/branches{/branch}", "collaborators_url": "$url/collaborators{/collaborator}",
    "comments_url": "$url/comments{/number}", "commits_url": "$url/commits{/sha}",
    "compare_url": "$url/compare/{base}...{head}", "contents_url": "$url/contents/{+path}",
    "contributors_url": "$url/contributors", "deployments_url": "$url/deployments",
    "downloads_url": "$url/downloads", "events_url": "$url/events", "forks_url": "$url/forks",
    "git_commits_url": "$url/git/commits{/sha}", "git_refs_url": "$url/git/refs{/sha}",
    "git_tags_url": "$url/git/tags{/sha}", "hooks_url": "$url/hooks",
    "issue_comment_url": "$url/issues/comments{/number}", "issue_events_url": "$url/issues/events{/number}",
    "issues_url": "$url/issues{/number}", "keys_url": "$url/keys{/key_id}",
    "labels_url": "$url/labels{/name}",
    "languages_url": "$url/languages", "merges_url": "$url/merges",
    "milestones_url": "$url/milestones{/number}",
    "notifications_url": "$url/notifications{?since,all,participating}", "pulls_url": "$url/pulls{/number}",
    "releases_url": "$url/releases{/id}", "stargazers_url": "$url/stargazers",
    "statuses_url": "$url/statuses/{sha}", "subscribers_url": "$url/subscribers",
    "subscription_url": "$url/subscription", "tags_url": "$url/tags", "teams_url": "$url/teams",
    "trees_url": "$url/git/trees{/sha}", "description": null, "fork": false, "mirror_url": null,
    "homepage": null, "language": "Python", "forks": 0, "forks_count": 0, "stargazers_count": 0,
    "watchers": 0,
    "watchers_count": 0, "size": 100, "is_template": false, "topics": [], "has_issues": true,
    "has_projects": true, "has_wiki": true, "has_pages": false, "has_downloads": true,
    "has_discussions": false,
    "archived": false, "disabled": false, "license": null, "network_count": 0, "subscribers_count": 0}"""
_COMMIT = """{
    "sha": "$sha", "node_id": "$node_id", "url": "$api/repos/$repo/commits/$sha",
    "html_url": "https://github.com/$repo/commit/$sha",
    "comments_url": "$api/repos/$repo/commits/$sha/comments",
    "author": null, "committer": null, "parents": [],
    "commit": {"message": "A commit", "comment_count": 0, "url": "$api/repos/$repo/git/commits/$sha",
        "tree": {"sha": "$tree", "url": "$api/repos/$repo/git/trees/$tree"},
        "author": {"name": "The Octocat", "email": "octocat@users.noreply.github.com", "date": "$seeded"},
        "committer": {"name": "The Octocat", "email": "octocat@users.noreply.github.com",
        "date": "$seeded"}}}"""
_ISSUE = """{
    "id": $id, "node_id": "$node_id", "number": $number, "url": "$api/repos/$repo/issues/$number",
    "repository_url": "$api/repos/$repo", "labels_url": "$api/repos/$repo/issues/$number/labels{/name}",
    "comments_url": "$api/repos/$repo/issues/$number/comments", "html_url": "$html_url",
    "events_url": "$api/repos/$repo/issues/$number/events", "state": "$state", "comments": $comments,
    "author_association": "$association", "created_at": "$seeded", "updated_at": "$seeded", "milestone": null,
    "locked": false, "active_lock_reason": null, "state_reason": null, "closed_by": null}"""
_LABEL = """{
    "id": $id, "node_id": "$node_id", "url": "$api/repos/$repo/labels/$name", "name": "$name",
    "description": null,
    "color": "ededed", "default": false}"""
_COMMENT = """{
    "id": $id, "node_id": "$node_id", "url": "$api/repos/$repo/issues/comments/$id",
    "html_url": "https://github.com/$repo/$kind/$number#issuecomment-$id",
    "issue_url": "$api/repos/$repo/issues/$number",
    "created_at": "$created_at", "updated_at": "$updated_at", "author_association": "$association",
    "reactions": {"url": "$api/repos/$repo/issues/comments/$id/reactions"}}"""
_CHECK_RUN = """{
    "id": $id, "node_id": "$node_id", "head_sha": "$head_sha", "url": "$api/repos/$repo/check-runs/$id",
    "html_url": "https://github.com/$repo/runs/$id", "pull_requests": []}"""
_PULL = """{
    "id": $id, "node_id": "$node_id", "number": $number, "url": "$api/repos/$repo/pulls/$number",
    "html_url": "https://github.com/$repo/pull/$number", "issue_url": "$api/repos/$repo/issues/$number",
    "diff_url": "https://github.com/$repo/pull/$number.diff",
    "patch_url": "https://github.com/$repo/pull/$number.patch",
    "commits_url": "$api/repos/$repo/pulls/$number/commits",
    "review_comments_url": "$api/repos/$repo/pulls/$number/comments",
    "review_comment_url": "$api/repos/$repo/pulls/comments{/number}",
    "comments_url": "$api/repos/$repo/issues/$number/comments",
    "statuses_url": "$api/repos/$repo/statuses/$head_sha", "state": "$state",
    "mergeable_state": "$mergeable_state", "author_association": "$association",
    "created_at": "$seeded", "updated_at": "$seeded",
    "_links": {"self": {"href": "$api/repos/$repo/pulls/$number"},
        "html": {"href": "https://github.com/$repo/pull/$number"},
        "issue": {"href": "$api/repos/$repo/issues/$number"},
        "comments": {"href": "$api/repos/$repo/issues/$number/comments"},
        "review_comments": {"href": "$api/repos/$repo/pulls/$number/comments"},
        "review_comment": {"href": "$api/repos/$repo/pulls/comments{/number}"},
        "commits": {"href": "$api/repos/$repo/pulls/$number/commits"},
        "statuses": {"href": "$api/repos/$repo/statuses/$head_sha"}},
    "locked": false, "labels": [], "milestone": null, "active_lock_reason": null, "assignee": null,
    "assignees": [], "requested_reviewers": [], "requested_teams": [], "auto_merge": null, "draft": false,
    "merged_by": null, "comments": 0, "review_comments": 0, "maintainer_can_modify": false, "commits": 1,
    "additions": 1, "deletions": 0, "changed_files": 1}"""
_CONTENT_FILE = """{
    "type": "file", "encoding": "base64", "size": $size, "name": "$name", "path": "$path", "sha": "$sha",
    "url": "$api/repos/$repo/contents/$path?ref=$ref", "git_url": "$api/repos/$repo/git/blobs/$sha",
    "html_url": "https://github.com/$repo/blob/$ref/$path",
    "download_url": "https://raw.githubusercontent.com/$repo/$ref/$path",
    "_links": {"self": "$api/repos/$repo/contents/$path?ref=$ref", "git": "$api/repos/$repo/git/blobs/$sha",
        "html": "https://github.com/$repo/blob/$ref/$path"}}"""
_BRANCH = """{
    "name": "$name", "protected": false, "protection_url": "$api/repos/$repo/branches/$name/protection",
    "_links": {"self": "$api/repos/$repo/branches/$name", "html": "https://github.com/$repo/tree/$name"},
    "protection": {"enabled": false,
        "required_status_checks": {"enforcement_level": "off", "contexts": [], "checks": []}}}"""
_COMPARISON = """{
    "url": "$api/repos/$repo/compare/$basehead", "html_url": "https://github.com/$repo/compare/$basehead",
    "permalink_url": "https://github.com/$repo/compare/$basehead",
    "diff_url": "https://github.com/$repo/compare/$basehead.diff",
    "patch_url": "https://github.com/$repo/compare/$basehead.patch", "status": "$status",
    "ahead_by": $ahead_by, "total_commits": $ahead_by, "files": []}"""


@dataclass
class Render:
    """Builds response bodies; API URLs point back at the stand-in, html_url at github.com."""

    state: StandinState
    api: str

    def fill(self, template: str, **values: object) -> Json:
        """A shape with `$api` and `$seeded` filled in too; values are ids, logins, refs and URLs."""
        values |= {"api": self.api, "seeded": iso(SEEDED_AT)}
        text = {key: value if isinstance(value, str) else json.dumps(value) for key, value in values.items()}
        return json.loads(Template(template).substitute(text))  # type: ignore[no-any-return]

    def user(self, login: str, type_: str | None = None) -> Json:
        type_, uid = type_ or ("Bot" if login.endswith("[bot]") else "User"), self.state.user_id(login)
        html_url = f"{HTML}/apps/{login.removesuffix('[bot]')}" if type_ == "Bot" else f"{HTML}/{login}"
        return self.fill(
            _USER, login=login, id=uid, node_id=_node_id(type_, uid), type=type_, html_url=html_url
        )

    def account(self, login: str) -> Json:
        installation = self.state.installation_for(login)
        return self.user(login, installation.account_type if installation else "User")

    def app(self) -> Json:
        slug, app_id = self.state.app_slug, self.state.app_id
        app = self.fill(
            _APP, id=app_id, slug=slug, node_id=_node_id("Integration", app_id), name=slug.title()
        )
        app["client_id"] = f"Iv1.{_fake_sha(slug)[:16]}"
        return app | {
            "owner": self.user("railyard-dev"),
            "permissions": DEFAULT_PERMISSIONS,
        }

    def installation(self, i: Installation) -> Json:
        account = self.user(i.account, i.account_type)
        state, target = self.state, {"target_id": account["id"], "type": i.account_type}
        installation = self.fill(
            _INSTALLATION, id=i.id, app_id=state.app_id, app_slug=state.app_slug, **target
        )
        return installation | {"account": account, "permissions": i.permissions}

    def repository(self, r: Repository) -> Json:
        owner, name = r.full_name.split("/")
        shape = self.fill(
            _REPOSITORY,
            id=r.id,
            node_id=_node_id("Repository", r.id),
            name=name,
            full_name=r.full_name,
            private=r.private,
            visibility="private" if r.private else "public",
            default_branch=r.default_branch,
            open_issues=sum(i.state == "open" for i in r.issues.values()),
            url=f"{self.api}/repos/{r.full_name}",
        )
        return shape | {"owner": self.account(owner)}

    def _fork(self, full_name: str) -> Json:
        """A fork's repository object, as it appears in a PR's `head.repo`."""
        owner, name = full_name.split("/")
        fork_id = int(_fake_sha(full_name)[:8], 16)
        shape = self.fill(
            _REPOSITORY,
            id=fork_id,
            node_id=_node_id("Repository", fork_id),
            name=name,
            full_name=full_name,
            private=False,
            visibility="public",
            default_branch="main",
            open_issues=0,
            url=f"{self.api}/repos/{full_name}",
        )
        return shape | {"owner": self.account(owner), "fork": True}

    def commit(self, repo: str, sha: str) -> Json:
        return self.fill(
            _COMMIT, sha=sha, node_id=_node_id("Commit", sha), repo=repo, tree=_fake_sha(sha, "tree")
        )

    def association(self, repo: str, login: str) -> str:
        if login.lower() == repo.split("/")[0].lower():
            return "OWNER"
        role = self.state.permissions.get((repo, login), "none")
        return "COLLABORATOR" if ROLES.index(role) >= ROLES.index("triage") else "NONE"

    def issue(self, r: Repository, issue: Issue) -> Json:
        number, uid = issue.number, r.id * 100_000 + issue.number
        html_url = f"{HTML}/{r.full_name}/{'pull' if number in r.pulls else 'issues'}/{number}"
        shape = self.fill(
            _ISSUE,
            id=uid,
            node_id=_node_id("Issue", uid),
            number=number,
            repo=r.full_name,
            html_url=html_url,
            state=issue.state,
            comments=sum(
                (c.repo, c.issue_number) == (r.full_name, number) for c in self.state.comments.values()
            ),
            association=self.association(r.full_name, issue.user),
        )
        assignees = [self.user(login) for login in issue.assignees]
        if number in r.pulls:
            links: Json = {"url": f"{shape['repository_url']}/pulls/{number}", "html_url": html_url}
            links |= {"diff_url": f"{html_url}.diff", "patch_url": f"{html_url}.patch", "merged_at": None}
            shape["pull_request"] = links
        return shape | {
            "title": issue.title,
            "body": issue.body,
            "user": self.user(issue.user),
            "labels": [self.label(r, name) for name in issue.labels],
            "assignees": assignees,
            "assignee": assignees[0] if assignees else None,
            "closed_at": iso(SEEDED_AT) if issue.state == "closed" else None,
        }

    def label(self, r: Repository, name: str) -> Json:
        label_id = int(_fake_sha(r.full_name, name)[:7], 16)
        return self.fill(
            _LABEL, id=label_id, node_id=_node_id("Label", label_id), repo=r.full_name, name=name
        )

    def comment(self, c: Comment) -> Json:
        repository = self.state.repository(c.repo)
        shape = self.fill(
            _COMMENT,
            id=c.id,
            node_id=_node_id("IssueComment", c.id),
            repo=c.repo,
            kind="pull" if repository and c.issue_number in repository.pulls else "issues",
            number=c.issue_number,
            created_at=iso(c.created_at),
            updated_at=iso(c.updated_at),
            association="NONE" if c.user_type == "Bot" else self.association(c.repo, c.user),
        )
        counts = Counter(r.content for r in self.state.reactions if r.comment_id == c.id)
        shape["reactions"] |= {"total_count": counts.total(), **{name: counts[name] for name in REACTIONS}}
        return shape | {
            "body": c.body,
            "user": self.user(c.user, c.user_type),
            "performed_via_github_app": self.app() if c.app_id is not None else None,
        }

    def reaction(self, r: Reaction) -> Json:
        shape = {"id": r.id, "node_id": _node_id("Reaction", r.id), "content": r.content}
        return shape | {"user": self.user(r.user), "created_at": iso(r.created_at)}

    def check_run(self, run: CheckRun) -> Json:
        node_id = _node_id("CheckRun", run.id)
        shape = self.fill(_CHECK_RUN, id=run.id, node_id=node_id, head_sha=run.head_sha, repo=run.repo)
        return shape | {
            "name": run.name,
            "status": run.status,
            "conclusion": run.conclusion,
            "details_url": run.details_url,
            "external_id": run.external_id,
            "started_at": iso(run.started_at) if run.started_at else None,
            "completed_at": iso(run.completed_at) if run.completed_at else None,
            "output": run.output | {"annotations_count": 0, "annotations_url": f"{shape['url']}/annotations"},
            "check_suite": {"id": int(_fake_sha(run.repo, run.head_sha)[:7], 16)},
            "app": self.app(),
        }

    def pull(self, r: Repository, pull: PullRequest) -> Json:
        uid, number = r.id * 100_000 + pull.number, pull.number
        shape = self.fill(
            _PULL,
            id=uid,
            node_id=_node_id("PullRequest", uid),
            number=number,
            repo=r.full_name,
            head_sha=pull.head_sha,
            state=pull.state,
            mergeable_state={True: "clean", False: "dirty", None: "unknown"}[pull.mergeable],
            association=self.association(r.full_name, pull.user),
        )
        repository, owner = self.repository(r), r.full_name.split("/")[0]
        base_sha = r.resolve(pull.base_ref) or _fake_sha(r.full_name, pull.base_ref)
        for side, ref, sha in (("head", pull.head_ref, pull.head_sha), ("base", pull.base_ref, base_sha)):
            shape[side] = {"label": f"{owner}:{ref}", "ref": ref, "sha": sha, "repo": repository}
            shape[side]["user"] = repository["owner"]
        if pull.head_repo != "":  # a fork's head (or a deleted fork's: null, as GitHub answers)
            fork = self._fork(pull.head_repo) if pull.head_repo else None
            fork_owner = pull.head_repo.split("/")[0] if pull.head_repo else owner
            shape["head"].update({"repo": fork, "label": f"{fork_owner}:{pull.head_ref}"})
        closed_at = iso(SEEDED_AT) if pull.state == "closed" else None
        return shape | {
            "title": pull.title,
            "body": pull.body,
            "user": self.user(pull.user),
            "closed_at": closed_at,
            "merged": pull.merged,
            "merged_at": closed_at if pull.merged else None,
            "merge_commit_sha": pull.merge_commit_sha,
            "mergeable": pull.mergeable,
            "rebaseable": pull.mergeable,
        }

    def content_file(self, r: Repository, path: str, ref: str) -> Json:
        data = r.files[path].encode()
        sha, encoded = git_blob_sha(data), base64.b64encode(data).decode()
        name, size = path.rsplit("/", 1)[-1], len(data)
        shape = self.fill(_CONTENT_FILE, repo=r.full_name, path=path, ref=ref, sha=sha, name=name, size=size)
        # GitHub wraps the base64 every 60 characters and ends it with a newline.
        return shape | {"content": "".join(encoded[i : i + 60] + "\n" for i in range(0, len(encoded), 60))}

    def branch(self, r: Repository, name: str) -> Json:
        shape = self.fill(_BRANCH, repo=r.full_name, name=name)
        return shape | {"commit": self.commit(r.full_name, r.branches[name])}

    def comparison(self, r: Repository, base: str, head: str, status: str) -> Json:
        """base...head; the merge base is base when head is ahead, head when behind, else another."""
        (ahead_by, behind_by), basehead = COMPARE_COUNTS[status], f"{base}...{head}"
        base_sha, head_sha = r.resolve(base) or "", r.resolve(head) or ""
        merge_base = {"identical": base_sha, "ahead": base_sha, "behind": head_sha}.get(
            status, _fake_sha(basehead)
        )
        shape = self.fill(_COMPARISON, repo=r.full_name, basehead=basehead, status=status, ahead_by=ahead_by)
        return shape | {
            "behind_by": behind_by,
            "base_commit": self.commit(r.full_name, base_sha),
            "merge_base_commit": self.commit(r.full_name, merge_base),
            "commits": [self.commit(r.full_name, head_sha)] if ahead_by else [],
        }


# --- errors and paging -------------------------------------------------------------------------


class GitHubError(Exception):
    """An error answer in GitHub's shape: message, documentation_url, status (and errors)."""

    def __init__(
        self, status: int, message: str, docs: str = DOCS, headers: dict[str, str] | None = None, **extra: Any
    ) -> None:
        super().__init__(message)
        self.status, self.body = status, {"message": message, "documentation_url": docs, **extra}
        self.headers = headers or {}

    def response(self) -> web.Response:
        body = {**self.body, "status": str(self.status)}
        return web.json_response(body, status=self.status, headers=self.headers)


def _not_found(message: str = "Not Found") -> GitHubError:
    return GitHubError(404, message)


def _invalid(resource: str, field_name: str, code: str = "missing_field") -> GitHubError:
    return GitHubError(
        422, "Validation Failed", errors=[{"resource": resource, "code": code, "field": field_name}]
    )


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response(body, status=status, headers=headers)


def _paginate(request: web.Request, items: list[Any]) -> tuple[list[Any], dict[str, str]]:
    """One page of `items` per ?per_page and ?page, and GitHub's Link header for the others."""
    per_page = min(int(request.query.get("per_page", 30)), 100)
    page = max(int(request.query.get("page", 1)), 1)
    last = max(1, -(-len(items) // per_page))
    rels = [("next", page + 1), ("last", last)] if page < last else []
    rels += [("prev", page - 1), ("first", 1)] if page > 1 else []
    links = ", ".join(f'<{request.url.update_query(page=n)}>; rel="{rel}"' for rel, n in rels)
    return items[(page - 1) * per_page : page * per_page], {"Link": links} if links else {}


# --- endpoints -----------------------------------------------------------------------------------

STATE = web.AppKey("state", StandinState)
BODY = web.RequestKey[Json | None]("body")  # the JSON object sent ({} if none); None if not an object
INSTALLATION = web.RequestKey[int | None]("installation")  # the caller's installation, if a token


def _render(request: web.Request) -> Render:
    return Render(request.app[STATE], f"{request.scheme}://{request.host}")


def _installation(request: web.Request) -> Installation:
    installation_id = request[INSTALLATION]
    assert installation_id is not None, "the route needs an installation token"
    return request.app[STATE].installations[installation_id]


def _repository(request: web.Request) -> Repository:
    """The path's repository, if the caller's installation can see it (404 otherwise, as GitHub)."""
    owner = request.match_info["owner"]
    repository = request.app[STATE].repository(f"{owner}/{request.match_info['repo']}")
    if repository is None or _installation(request).account.lower() != owner.lower():
        raise _not_found()
    return repository


def _moved(request: web.Request, repository: Repository, number: int) -> GitHubError:
    """GitHub's answer at a transferred issue's old address: 301, the new address in Location
    and in the body's `url` (the same path under /repositories/{id}/issues/{number})."""
    target_id, new_number = repository.transferred[number]
    rest = request.path.split(f"/issues/{number}", 1)[1] if f"/issues/{number}" in request.path else ""
    url = f"{_render(request).api}/repositories/{target_id}/issues/{new_number}{rest}"
    docs = "https://docs.github.com/rest/guides/best-practices-for-using-the-rest-api#follow-redirects"
    return GitHubError(301, "Moved Permanently", docs, headers={"Location": url}, url=url)


def _issue(repository: Repository, number: int, request: web.Request | None = None) -> Issue:
    """An issue, or the issue side of a pull request (every pull request is an issue); a
    transferred issue answers 301 (when the request is given)."""
    if request is not None and number in repository.transferred:
        raise _moved(request, repository, number)
    if number not in repository.issues and number in repository.pulls:
        pull = repository.pulls[number]
        repository.issues[number] = Issue(number, pull.title, pull.body, state=pull.state, user=pull.user)
    if number not in repository.issues:
        raise _not_found()
    return repository.issues[number]


def _comment(request: web.Request) -> Comment:
    repository = _repository(request)
    comment = request.app[STATE].comments.get(int(request.match_info["comment_id"]))
    if comment is None or comment.repo != repository.full_name:
        raise _not_found()
    return comment


async def create_token(request: web.Request) -> web.Response:
    state = request.app[STATE]
    installation = state.installations.get(int(request.match_info["installation_id"]))
    if installation is None:
        raise _not_found()
    token = state.tokens[state.issue_token(installation.id)]
    permissions = (request[BODY] or {}).get("permissions") or installation.permissions
    body = {"token": token.token, "expires_at": iso(token.expires_at), "permissions": permissions}
    return _json(body | {"repository_selection": "all"}, 201)


async def get_app(request: web.Request) -> web.Response:
    return _json(_render(request).app())


async def get_repo_installation(request: web.Request) -> web.Response:
    state, owner = request.app[STATE], request.match_info["owner"]
    installation = state.installation_for(owner)
    if installation is None or state.repository(f"{owner}/{request.match_info['repo']}") is None:
        raise _not_found()
    return _json(_render(request).installation(installation))


async def list_deliveries(request: web.Request) -> web.Response:
    """Newest first; ?cursor=v1_<id> continues after that delivery, as GitHub's Link says."""
    items = sorted(request.app[STATE].deliveries, key=lambda d: d.id, reverse=True)
    if cursor := request.query.get("cursor"):
        items = [d for d in items if d.id < int(cursor.removeprefix("v1_"))]
    per_page = min(int(request.query.get("per_page", 30)), 100)
    page, headers = items[:per_page], {}
    if len(items) > per_page:
        next_url = request.url.update_query(per_page=per_page, cursor=f"v1_{page[-1].id}")
        headers["Link"] = f'<{next_url}>; rel="next"'
    return _json([_plain(d) | {"throttled_at": None} for d in page], headers=headers)


async def redeliver(request: web.Request) -> web.Response:
    state, delivery_id = request.app[STATE], int(request.match_info["delivery_id"])
    original = next((d for d in state.deliveries if d.id == delivery_id), None)
    if original is None:
        raise _not_found()
    state.redelivery_attempts.append(delivery_id)
    # GitHub records the attempt as a new delivery of the same event (same guid).
    state.deliveries.append(
        replace(original, id=state.next_id(), delivered_at=state.stamp(), redelivery=True)
    )
    return _json({}, 202)


async def get_content(request: web.Request) -> web.Response:
    """A file on the default branch; ?ref may name it, or its head sha."""
    repository, ref = _repository(request), request.query.get("ref", "")
    if ref not in ("", repository.default_branch, repository.branches[repository.default_branch]):
        raise _not_found(f"No commit found for the ref {ref}")
    if (path := request.match_info["path"].strip("/")) not in repository.files:
        raise _not_found()
    return _json(_render(request).content_file(repository, path, ref or repository.default_branch))


async def get_repo(request: web.Request) -> web.Response:
    return _json(_render(request).repository(_repository(request)))


async def get_issue(request: web.Request) -> web.Response:
    repository = _repository(request)
    number = int(request.match_info["number"])
    return _json(_render(request).issue(repository, _issue(repository, number, request)))


async def get_issue_by_repository_id(request: web.Request) -> web.Response:
    """GET /repositories/{id}/issues/{number}: where a transferred issue's 301 points."""
    state, wanted = request.app[STATE], int(request.match_info["repository_id"])
    repository = next((r for r in state.repositories.values() if r.id == wanted), None)
    owner = repository.full_name.split("/")[0] if repository else ""
    if repository is None or _installation(request).account.lower() != owner.lower():
        raise _not_found()
    number = int(request.match_info["number"])
    return _json(_render(request).issue(repository, _issue(repository, number, request)))


async def list_comments(request: web.Request) -> web.Response:
    """Oldest first, paged; ?since keeps those updated at or after it."""
    repository, number = _repository(request), int(request.match_info["number"])
    _issue(repository, number, request)
    since = _time(request.query["since"]) if "since" in request.query else None
    comments = [
        c
        for c in sorted(request.app[STATE].comments.values(), key=lambda c: c.id)
        if (c.repo, c.issue_number) == (repository.full_name, number)
        and (since is None or c.updated_at >= since)
    ]
    page, headers = _paginate(request, comments)
    return _json([_render(request).comment(c) for c in page], headers=headers)


async def create_comment(request: web.Request) -> web.Response:
    state, repository, number = request.app[STATE], _repository(request), int(request.match_info["number"])
    _issue(repository, number, request)
    if not isinstance(body := (request[BODY] or {}).get("body"), str):
        raise _invalid("IssueComment", "body")
    comment = state.add_comment(repository.full_name, number, body, state.bot_login, "Bot")
    comment.app_id = state.app_id
    rendered = _render(request).comment(comment)
    return _json(rendered, 201, {"Location": rendered["url"]})


async def get_comment(request: web.Request) -> web.Response:
    return _json(_render(request).comment(_comment(request)))


async def edit_comment(request: web.Request) -> web.Response:
    comment = _comment(request)
    if not isinstance(body := (request[BODY] or {}).get("body"), str):
        raise _invalid("IssueComment", "body")
    comment.body, comment.updated_at = body, request.app[STATE].stamp()
    return _json(_render(request).comment(comment))


async def create_reaction(request: web.Request) -> web.Response:
    """201 for a new reaction; 200 with the existing one if this user already reacted so."""
    state, comment = request.app[STATE], _comment(request)
    if (content := (request[BODY] or {}).get("content")) not in REACTIONS:
        raise _invalid("Reaction", "content", "invalid")
    key = (comment.id, content, state.bot_login)
    if existing := next((r for r in state.reactions if (r.comment_id, r.content, r.user) == key), None):
        return _json(_render(request).reaction(existing), 200)
    reaction = Reaction(state.next_id(), comment.id, content, state.bot_login, state.stamp())
    state.reactions.append(reaction)
    return _json(_render(request).reaction(reaction), 201)


async def add_assignees(request: web.Request) -> web.Response:
    repository = _repository(request)
    issue = _issue(repository, int(request.match_info["number"]), request)
    for login in (request[BODY] or {}).get("assignees", []):
        if login not in issue.assignees:
            issue.assignees.append(login)
    return _json(_render(request).issue(repository, issue), 201)


def _update_check_run(run: CheckRun, body: Json, now: datetime) -> None:
    """Apply a create or update body with GitHub's rules: a conclusion completes the run."""
    run.name, run.details_url = body.get("name", run.name), body.get("details_url", run.details_url)
    run.external_id = body.get("external_id", run.external_id)
    if "output" in body:
        if not {"title", "summary"} <= body["output"].keys():
            raise _invalid("CheckRun", "output")
        run.output = {key: body["output"].get(key) for key in ("title", "summary", "text")}
    if body.get("status", run.status) not in CHECK_STATUSES:
        raise _invalid("CheckRun", "status", "invalid")
    run.status = body.get("status", run.status)
    if "conclusion" in body:
        if body["conclusion"] not in CHECK_CONCLUSIONS:
            raise _invalid("CheckRun", "conclusion", "invalid")
        run.conclusion, run.status = body["conclusion"], "completed"
    if run.status == "completed" and run.conclusion is None:
        raise _invalid("CheckRun", "conclusion")
    run.started_at = _time(body["started_at"]) if "started_at" in body else run.started_at
    if run.status == "completed":
        run.completed_at = _time(body.get("completed_at") or run.completed_at or now)


async def create_check_run(request: web.Request) -> web.Response:
    state, repository, body = request.app[STATE], _repository(request), request[BODY] or {}
    for required in ("name", "head_sha"):
        if not isinstance(body.get(required), str):
            raise _invalid("CheckRun", required)
    now = state.stamp()
    run = CheckRun(state.next_id(), repository.full_name, body["name"], body["head_sha"], started_at=now)
    _update_check_run(run, body, now)
    state.check_runs[run.id] = run
    return _json(_render(request).check_run(run), 201)


async def update_check_run(request: web.Request) -> web.Response:
    repository, state = _repository(request), request.app[STATE]
    run = state.check_runs.get(int(request.match_info["check_run_id"]))
    if run is None or run.repo != repository.full_name:
        raise _not_found()
    body = request[BODY] or {}
    _update_check_run(run, body, state.stamp())
    return _json(_render(request).check_run(run))


async def list_check_runs(request: web.Request) -> web.Response:
    """The runs on a commit (a sha or a branch); by default only the newest of each name."""
    repository, query = _repository(request), request.query
    if (sha := repository.resolve(request.match_info["ref"])) is None:
        raise GitHubError(422, f"No commit found for SHA: {request.match_info['ref']}")
    runs = sorted(request.app[STATE].check_runs.values(), key=lambda r: r.id)
    runs = [r for r in runs if (r.repo, r.head_sha) == (repository.full_name, sha)]
    if query.get("filter", "latest") == "latest":
        runs = list({r.name: r for r in runs}.values())
    runs = [r for r in reversed(runs) if query.get("check_name", r.name) == r.name]
    runs = [r for r in runs if query.get("status", r.status) == r.status]
    page, headers = _paginate(request, runs)
    body = {"total_count": len(runs), "check_runs": [_render(request).check_run(r) for r in page]}
    return _json(body, headers=headers)


async def get_team_membership(request: web.Request) -> web.Response:
    state, info = request.app[STATE], request.match_info
    org, team, login = info["org"], info["team_slug"], info["username"]
    if _installation(request).account.lower() != org.lower():
        raise GitHubError(403, "Resource not accessible by integration")
    if (membership := state.team_memberships.get((org, team, login))) is None:
        raise _not_found()
    url = f"{_render(request).api}/orgs/{org}/teams/{team}/memberships/{login}"
    return _json({"url": url, "role": "member", "state": membership})


async def get_collaborator_permission(request: web.Request) -> web.Response:
    """The role, and the legacy permission that folds maintain into write and triage into read."""
    repository, login = _repository(request), request.match_info["username"]
    # Anyone may read a public repository, so GitHub says "read" for strangers there.
    stranger = "none" if repository.private else "read"
    role = request.app[STATE].permissions.get((repository.full_name, login), stranger)
    legacy = {"triage": "read", "maintain": "write"}.get(role, role)
    rank = ROLES.index(role)
    levels = {"pull": "read", "triage": "triage", "push": "write", "maintain": "maintain", "admin": "admin"}
    flags = {flag: rank >= ROLES.index(level) for flag, level in levels.items()}
    user = _render(request).user(login) | {"permissions": flags, "role_name": role}
    return _json({"permission": legacy, "role_name": role, "user": user})


async def get_branch(request: web.Request) -> web.Response:
    repository, name = _repository(request), request.match_info["branch"]
    if name not in repository.branches:
        raise _not_found("Branch not found")
    return _json(_render(request).branch(repository, name))


async def get_commit(request: web.Request) -> web.Response:
    """A commit named by a branch, or by a full or abbreviated sha of a branch or PR head."""
    repository, ref = _repository(request), request.match_info["ref"]
    heads = (p.head_sha for p in repository.pulls.values() if p.head_sha)
    known = {*repository.branches.values(), *heads, *repository.commits}
    sha = repository.branches.get(ref) or next(
        (s for s in known if len(ref) >= 7 and s.startswith(ref.lower())), None
    )
    if sha is None:
        raise GitHubError(422, f"No commit found for SHA: {ref}")
    return _json(_render(request).commit(repository.full_name, sha))


async def get_pull(request: web.Request) -> web.Response:
    repository = _repository(request)
    if (pull := repository.pulls.get(int(request.match_info["number"]))) is None:
        raise _not_found()
    return _json(_render(request).pull(repository, pull))


async def compare(request: web.Request) -> web.Response:
    """The seeded status for base...head (identical when both name one commit), else 404."""
    repository = _repository(request)
    base, _, head = request.match_info["basehead"].partition("...")
    base_sha, head_sha = repository.resolve(base), repository.resolve(head)
    same = "identical" if base_sha and base_sha == head_sha else None
    if base_sha is None or head_sha is None or (status := repository.compare.get((base, head), same)) is None:
        raise _not_found()
    return _json(_render(request).comparison(repository, base, head, status))


# --- the request pipeline: record, authenticate, rate-limit, inject, answer ----------------------

RULES = web.AppKey("rules", dict)  # route -> (credential it needs, installation permission it needs)


def _looks_like_jwt(credential: str) -> bool:
    """Three base64url parts, the first two JSON objects (the signature is not checked)."""
    parts = credential.split(".")
    if len(parts) != 3 or not all(re.fullmatch(r"[A-Za-z0-9_-]+", part) for part in parts):
        return False
    try:
        return all(
            isinstance(json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4))), dict) for p in parts[:2]
        )
    except ValueError:
        return False


def _authenticate(state: StandinState, header: str) -> tuple[str, int | None]:
    scheme, _, credential = header.partition(" ")
    token = state.tokens.get(credential.strip())
    if not header:
        return "none", None
    if scheme.lower() in ("token", "bearer") and token is not None and token.expires_at > state.now():
        return "installation", token.installation_id
    if scheme.lower() == "bearer" and _looks_like_jwt(credential.strip()):
        return "jwt", None
    return "invalid", None


def _bucket_key(kind: str, installation_id: int | None) -> str:
    return f"installation:{installation_id}" if installation_id else "app" if kind == "jwt" else "anonymous"


def _check_access(request: web.Request, kind: str, installation_id: int | None) -> None:
    if request.match_info.http_exception is not None:
        raise _not_found()
    if request[BODY] is None:
        raise GitHubError(400, "Problems parsing JSON")
    credential, needs = request.app[RULES][request.match_info.route]
    if credential == "jwt" and kind != "jwt":
        raise GitHubError(401, "A JSON web token could not be decoded")
    if credential == "installation" and kind != "installation":
        raise GitHubError(401, "Bad credentials")
    if needs and installation_id is not None:
        area, level = needs.split(":")
        granted = request.app[STATE].installations[installation_id].permissions.get(area, "none")
        if ACCESS_LEVELS.index(granted) < ACCESS_LEVELS.index(level):
            raise GitHubError(403, "Resource not accessible by integration")


def _fault_response(fault: Fault, installation_id: int | None, request_id: str) -> web.Response:
    message, docs = {502: "Bad Gateway", 503: "Service Unavailable"}.get(fault.status, "Server Error"), DOCS
    if fault.secondary_rate_limit or fault.status == 429:
        message, docs = SECONDARY_LIMIT.format(request_id), f"{LIMITS_DOCS}#about-secondary-rate-limits"
    elif fault.primary_rate_limit:
        message = f"API rate limit exceeded for installation ID {installation_id}."
        docs = f"{LIMITS_DOCS}#about-primary-rate-limits"
    response = GitHubError(fault.status, message, docs).response()
    if fault.retry_after is not None:
        response.headers["Retry-After"] = str(fault.retry_after)
    return response


async def _answer(
    request: web.Request, handler: Handler, kind: str, request_id: str
) -> tuple[web.StreamResponse, bool]:
    """The response, and whether it must report the rate limit as exhausted."""
    state, installation_id = request.app[STATE], request[INSTALLATION]
    try:
        _check_access(request, kind, installation_id)
        bucket = state.bucket(_bucket_key(kind, installation_id))
        if bucket.remaining == 0:
            fault: Fault | None = Fault(status=403, primary_rate_limit=True)
        else:
            bucket.remaining -= 1
            fault = state.take_fault(request.method, request.path) or state.random_fault(
                request.method, request.path
            )
        if fault is None:
            return await handler(request), False
        if not (fault.apply_then_fail or fault.apply_then_timeout or fault.apply_then_drop):
            await asyncio.sleep(fault.delay)
            if fault.retry_after is not None and state.limit_watch is not None:
                state.limit_watch.limited(installation_id, fault.retry_after)
            return _fault_response(fault, installation_id, request_id), fault.primary_rate_limit
        response = await handler(request)  # the effect happens; the client will not hear of it
        if fault.apply_then_drop and request.transport is not None:
            request.transport.close()  # no answer at all: the client sees the connection go
            return response, False
        if fault.apply_then_timeout:
            await asyncio.sleep(fault.delay)
            return response, False
        return _fault_response(fault, installation_id, request_id), False
    except GitHubError as error:
        return error.response(), False


@web.middleware
async def _github_edge(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.path.startswith("/_standin/"):
        return await handler(request)
    state = request.app[STATE]
    body: Any = None
    request[BODY] = {}
    if request.can_read_body:
        with contextlib.suppress(ValueError):
            body = await request.json()
        request[BODY] = body if isinstance(body, dict) else None  # GitHub: "Problems parsing JSON"
    kind, request[INSTALLATION] = _authenticate(state, request.headers.get("Authorization", ""))
    if state.limit_watch is not None:
        state.limit_watch.arrived(request[INSTALLATION], request.method, request.path)
    call = Call(
        request.method, request.path, dict(request.query), body, kind, request[INSTALLATION], state.now()
    )
    state.calls.append(call)
    request_id = ":".join(secrets.token_hex(n).upper() for n in (2, 3, 4, 4))
    response, exhausted = await _answer(request, handler, kind, request_id)
    bucket = state.bucket(_bucket_key(kind, request[INSTALLATION]))
    remaining = 0 if exhausted else bucket.remaining
    response.headers.update(
        {
            "x-ratelimit-limit": str(bucket.limit),
            "x-ratelimit-remaining": str(remaining),
            "x-ratelimit-reset": str(int(bucket.reset.timestamp())),
            "x-ratelimit-used": str(bucket.limit - remaining),
            "x-ratelimit-resource": "core",
            "x-github-request-id": request_id,
            "x-github-api-version-selected": request.headers.get("X-GitHub-Api-Version", "2022-11-28"),
            "x-github-media-type": "github.v3; format=json",
        }
    )
    call.status = response.status
    if state.after_write is not None and call.method in ("POST", "PATCH") and 200 <= call.status < 300:
        state.after_write(call)
    return response


# --- the control API (/_standin/) and the application -------------------------------------------


async def _control_calls(request: web.Request) -> web.Response:
    if request.method == "DELETE":
        request.app[STATE].calls.clear()
    return _json(_plain(request.app[STATE].calls))


async def _control_state(request: web.Request) -> web.Response:
    if request.method == "POST":
        request.app[STATE].seed(await request.json())
    return _json(request.app[STATE].snapshot())


async def _control_faults(request: web.Request) -> web.Response:
    data = await request.json()
    request.app[STATE].inject(data["method"], data["path"], *(Fault(**fault) for fault in data["faults"]))
    return _json({}, 201)


async def _control_clock(request: web.Request) -> web.Response:
    state, data = request.app[STATE], await request.json()
    if "now" in data:
        state.set_clock(_time(data["now"]), data.get("step_seconds", 0.0))
    if "advance" in data:
        state.advance(data["advance"])
    return _json({"now": iso(state.now())})


def create_standin(state: StandinState | None = None) -> web.Application:
    """The stand-in as an aiohttp application over `state` (a fresh one by default)."""
    app = web.Application(middlewares=[_github_edge])
    app[STATE] = state if state is not None else StandinState()
    app[RULES] = {}
    jwt, token, repo = "jwt", "installation", "/repos/{owner}/{repo}"
    issue, comment = repo + "/issues/{number:\\d+}", repo + "/issues/comments/{comment_id:\\d+}"
    team = "/orgs/{org}/teams/{team_slug}"
    routes: list[tuple[str, str, Handler, str, str | None]] = [
        ("POST", "/app/installations/{installation_id:\\d+}/access_tokens", create_token, jwt, None),
        ("GET", "/app", get_app, jwt, None),
        ("GET", repo + "/installation", get_repo_installation, jwt, None),
        ("GET", "/app/hook/deliveries", list_deliveries, jwt, None),
        ("POST", "/app/hook/deliveries/{delivery_id:\\d+}/attempts", redeliver, jwt, None),
        ("GET", repo, get_repo, token, None),  # metadata: every installation may read it
        ("GET", repo + "/contents/{path:.+}", get_content, token, "contents:read"),
        ("GET", issue, get_issue, token, "issues:read"),
        (
            "GET",
            "/repositories/{repository_id:\\d+}/issues/{number:\\d+}",
            get_issue_by_repository_id,
            token,
            "issues:read",
        ),
        ("GET", issue + "/comments", list_comments, token, "issues:read"),
        ("POST", issue + "/comments", create_comment, token, "issues:write"),
        ("POST", issue + "/assignees", add_assignees, token, "issues:write"),
        ("GET", comment, get_comment, token, "issues:read"),
        ("PATCH", comment, edit_comment, token, "issues:write"),
        ("POST", comment + "/reactions", create_reaction, token, "issues:write"),
        ("POST", repo + "/check-runs", create_check_run, token, "checks:write"),
        ("PATCH", repo + "/check-runs/{check_run_id:\\d+}", update_check_run, token, "checks:write"),
        ("GET", repo + "/commits/{ref:.+}/check-runs", list_check_runs, token, "checks:read"),
        ("GET", repo + "/commits/{ref:[^/]+}", get_commit, token, "contents:read"),
        ("GET", team + "/memberships/{username}", get_team_membership, token, "members:read"),
        ("GET", repo + "/collaborators/{username}/permission", get_collaborator_permission, token, None),
        ("GET", repo + "/branches/{branch:.+}", get_branch, token, None),
        ("GET", repo + "/pulls/{number:\\d+}", get_pull, token, "pull_requests:read"),
        ("GET", repo + "/compare/{basehead:.+}", compare, token, "contents:read"),
    ]
    for method, path, handler, credential, needs in routes:
        app[RULES][app.router.add_route(method, path, handler)] = (credential, needs)
    for method, name, control in [
        ("GET", "calls", _control_calls),
        ("DELETE", "calls", _control_calls),
        ("GET", "state", _control_state),
        ("POST", "state", _control_state),
        ("POST", "faults", _control_faults),
        ("POST", "clock", _control_clock),
    ]:
        app.router.add_route(method, f"/_standin/{name}", control)
    return app


@dataclass
class RunningStandin:
    url: str
    port: int
    state: StandinState


@contextlib.asynccontextmanager
async def running_standin(state: StandinState | None = None, port: int = 0) -> AsyncIterator[RunningStandin]:
    """Serve the stand-in on 127.0.0.1 (a free port by default) for the block's duration."""
    state = state if state is not None else StandinState()
    # A short shutdown timeout: an apply_then_timeout answer may still be asleep at exit.
    runner = web.AppRunner(create_standin(state), access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", port).start()
        bound = runner.addresses[0][1]
        yield RunningStandin(f"http://127.0.0.1:{bound}", bound, state)
    finally:
        await runner.cleanup()


# --- subprocess mode -----------------------------------------------------------------------------


@dataclass
class StandinProcess:
    """A stand-in running as a subprocess, seeded and inspected through /_standin/."""

    process: subprocess.Popen[bytes]
    url: str

    def control(self, method: str, name: str, payload: Any = None) -> Any:
        response = httpx.request(method, f"{self.url}/_standin/{name}", json=payload, timeout=10)
        response.raise_for_status()
        return response.json()

    def seed(self, data: Json) -> Any:
        return self.control("POST", "state", data)

    def inject(self, method: str, path_regex: str, *faults: Fault) -> None:
        self.control(
            "POST", "faults", {"method": method, "path": path_regex, "faults": [asdict(f) for f in faults]}
        )

    def calls(self) -> Any:
        return self.control("GET", "calls")


@contextlib.contextmanager
def standin_subprocess(
    port_file: Path, seed: Json | None = None, timeout: float = 15.0
) -> Iterator[StandinProcess]:
    """Start `python -m tests.github_standin`, wait for its port file, stop it afterwards."""
    command = [sys.executable, "-m", "tests.github_standin", "--port", "0", "--port-file", str(port_file)]
    process = subprocess.Popen(command, cwd=ROOT)
    try:
        deadline = time.monotonic() + timeout
        while not port_file.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the GitHub stand-in did not start (exit code {process.poll()})")
            time.sleep(0.05)
        standin = StandinProcess(process, f"http://127.0.0.1:{int(port_file.read_text())}")
        if seed:
            standin.seed(seed)
        yield standin
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout)


async def _serve(state: StandinState, port: int, port_file: Path | None) -> None:
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    async with running_standin(state, port) as standin:
        if port_file is not None:  # written whole, then renamed: a reader never sees half a number
            partial = port_file.with_name(port_file.name + ".partial")
            partial.write_text(str(standin.port))
            partial.replace(port_file)
        print(f"GitHub stand-in listening on {standin.url}", flush=True)
        await stop.wait()


def main(argv: list[str] | None = None) -> None:
    """Serve the GitHub stand-in on 127.0.0.1 until SIGTERM or SIGINT."""
    parser = argparse.ArgumentParser(prog="python -m tests.github_standin", description=main.__doc__)
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--port-file", type=Path, help="where to write the port once listening")
    parser.add_argument("--seed", type=Path, help="JSON in the shape POST /_standin/state takes")
    args = parser.parse_args(argv)
    state = StandinState()
    if args.seed:
        state.seed(json.loads(args.seed.read_text()))
    asyncio.run(_serve(state, args.port, args.port_file))


if __name__ == "__main__":
    main()
