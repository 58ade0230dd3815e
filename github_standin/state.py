"""Everything the GitHub stand-in knows: installations, repositories, issues, pulls, comments,
reactions, check-runs, deliveries, tokens, rate-limit buckets and the record of calls."""

from __future__ import annotations

import itertools
import re
import secrets
import uuid
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from github_standin.accounts import OAuthState
from github_standin.check_state import CheckRun as CheckRun
from github_standin.check_state import CheckSuite as CheckSuite
from github_standin.check_state import suite_id, suites_on
from github_standin.common import (
    DEFAULT_PERMISSIONS,
    SEEDED_AT,
    Json,
    ManualClock,
    RateBucket,
    fake_sha,
    parse_time,
    plain,
    wall_clock,
)
from github_standin.faults import Fault, LimitWatch, RandomFaults
from github_standin.history import History
from github_standin.projects import Projects


@dataclass
class Call:
    """One request as received; `auth` is "jwt", "installation", "user", "none" or "invalid"."""

    method: str
    path: str
    query: dict[str, str]
    body: Any
    auth: str
    installation_id: int | None
    at: datetime
    status: int = 0
    counted: bool = False  # it took one from the credential's rate-limit bucket

    @property
    def content_write(self) -> bool:
        """A write GitHub performed that creates or changes content (its secondary limits: 80 a
        minute, 500 an hour); the token exchange and GraphQL queries are not content."""
        return (
            self.method in ("POST", "PATCH", "PUT", "DELETE")
            and 200 <= self.status < 300
            and self.path.startswith("/repos/")
        )


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
    # GitHub computes mergeability when asked after the base or head moved: the next read answers
    # `mergeable: null` (`mergeable_state: unknown`) and starts it; reads after that answer `mergeable`.
    computing: bool = False
    body: str | None = ""
    user: str = "octocat"
    title: str = "A pull request"
    # The head branch's repository: "" is the PR's own, "owner/name" a fork, None a deleted fork.
    head_repo: str | None = ""
    # The files the PR changes, as they are at its head: path -> text (None: the PR removes it).
    files: dict[str, str | None] = field(default_factory=dict)
    # Issues linked from their Development sidebar: a number in this repository, or "owner/name#N".
    closing_issues: list[int | str] = field(default_factory=list)


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
    # sha -> tree sha, of commits sharing a tree (an amended message); others' derive from their sha
    trees: dict[str, str] = field(default_factory=dict)
    # Issues transferred away: number -> (id of the repository it went to, its number there).
    transferred: dict[int, tuple[int, int]] = field(default_factory=dict)
    private: bool = False
    id: int = 0
    created_at: datetime | None = None  # None: when the world was seeded

    def __post_init__(self) -> None:
        self.branches.setdefault(self.default_branch, fake_sha(self.full_name, self.default_branch))
        self.id = self.id or repository_id(self.full_name)

    def files_at(self, ref: str) -> dict[str, str] | None:
        """The files at a ref: the default branch's (by name or head sha), or a PR head's (by its
        sha or branch: the default branch's files with the PR's changes); None for an unknown ref."""
        if ref in ("", self.default_branch, self.branches[self.default_branch]):
            return self.files
        for pull in self.pulls.values():
            if ref in (pull.head_sha, pull.head_ref):
                changed = {**self.files, **pull.files}
                return {path: text for path, text in changed.items() if text is not None}
        return None

    def resolve(self, ref: str) -> str | None:
        """The commit a branch name (or `heads/NAME`) or a full sha names, or None."""
        branch = ref.removeprefix("heads/")
        return self.branches.get(branch) or (ref if re.fullmatch(r"[0-9a-f]{40}", ref) else None)

    def tree_of(self, sha: str) -> str:
        """The commit's tree sha: the one set in `trees`, else one of its own."""
        return self.trees.get(sha) or fake_sha(sha, "tree")


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
class WebhookTarget:
    """Where the app's webhooks go (its webhook URL) and the secret they are signed with."""

    url: str
    secret: str


@dataclass
class Token:
    token: str
    installation_id: int
    expires_at: datetime


def repository_id(full_name: str, generation: int = 0) -> int:
    """A stable id for the `generation`-th repository ever created under a name (0: the first),
    so payloads built anywhere in the tests agree with the stand-in; a reused name gets another."""
    salt = (f"generation-{generation}",) if generation else ()
    return int(fake_sha(full_name.casefold() if generation else full_name, *salt)[:7], 16)


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
    check_suites: dict[int, CheckSuite] = field(default_factory=dict)  # set by tests (see CheckSuite)
    apps: dict[int, str] = field(default_factory=dict)  # other apps' slugs by id (a CI app, say)
    team_memberships: dict[tuple[str, str, str], str] = field(default_factory=dict)  # (org, team, login)
    org_members: set[tuple[str, str]] = field(default_factory=set)  # (org, login), beyond the teams' members
    permissions: dict[tuple[str, str], str] = field(default_factory=dict)  # (repo, login) -> role
    deliveries: list[Delivery] = field(default_factory=list)
    redelivery_attempts: list[int] = field(default_factory=list)
    tokens: dict[str, Token] = field(default_factory=dict)
    oauth: OAuthState = field(default_factory=OAuthState)  # sign-in with GitHub: codes, user tokens
    calls: list[Call] = field(default_factory=list)
    rate_limit: int = 5000
    clock: Callable[[], datetime] = wall_clock
    faults: list[tuple[str, re.Pattern[str], deque[Fault]]] = field(default_factory=list)
    buckets: dict[str, RateBucket] = field(default_factory=dict)
    random_faults: RandomFaults | None = None  # off unless set: see RandomFaults
    limit_watch: LimitWatch | None = None  # off unless set: see LimitWatch
    after_write: Callable[[Call], None] | None = None  # each write GitHub did, before the client hears
    history: History = field(default_factory=History)  # ancestry, deployments, protection rules
    etag_per_credential: bool = False  # GitHub's ETags vary with the Authorization header too
    webhook: WebhookTarget | None = None  # None: the stand-in sends no webhooks (tests send their own)
    projects: Projects = field(default_factory=Projects)  # organizations' GitHub Projects (v2)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1_000_001), repr=False)
    _user_ids: dict[str, int] = field(default_factory=dict, repr=False)
    # Names a repository left (renamed, transferred) -> its id: GitHub answers 301 there till one takes it.
    moved: dict[str, int] = field(default_factory=dict)
    _names_used: dict[str, int] = field(default_factory=dict, repr=False)  # name -> repositories so far

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

    def login_of(self, account: int) -> str | None:
        """The login the account has now (None: GitHub knows no account with that id)."""
        return next((login for login, uid in self._user_ids.items() if uid == account), None)

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

    def counters(self) -> dict[str, int]:
        """The call accounting: calls counted against the rate limit, 304s (not counted), and
        content-creating writes performed."""
        return {
            "calls": len(self.calls),
            "counted": sum(c.counted for c in self.calls),
            "not_modified": sum(c.status == 304 for c in self.calls),
            "content_writes": sum(c.content_write for c in self.calls),
        }

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

    def issue_user_token(self, login: str) -> str:
        """A user's own token (as sign-in or a personal access token gives one): it acts as that account."""
        return self.oauth.issue_token(login, self.now()).token

    def add_repository(
        self, full_name: str, files: dict[str, str] | None = None, **fields: Any
    ) -> Repository:
        """A new repository; a name used before (renamed away) gets a new id, as on GitHub."""
        generation = self._names_used.get(full_name.casefold(), 0)
        fields.setdefault("id", repository_id(full_name, generation))
        if generation:  # a name used before: this repository is new now
            fields.setdefault("created_at", self.now())
        self._names_used[full_name.casefold()] = generation + 1
        self.moved.pop(full_name.casefold(), None)  # the name is this repository's now: no redirect
        repository = self.repositories[full_name] = Repository(full_name, files=dict(files or {}), **fields)
        return repository

    def rename_repository(self, old: str, new: str) -> Repository:
        """Rename (or, with another owner, transfer) a repository: the id stays, its issues'
        comments, its check runs and suites go with it, a PR from it names it anew as its head,
        and the old name answers 301 to `/repositories/{id}` until a new repository takes it."""
        repository = self.repositories.pop(old)
        repository.full_name = new
        self.repositories[new] = repository
        self.moved[old.casefold()] = repository.id
        self._names_used[new.casefold()] = self._names_used.get(new.casefold(), 0) + 1
        for repo, login in [key for key in self.permissions if key[0] == old]:
            self.permissions[(new, login)] = self.permissions.pop((repo, login))
        kept: list[Comment | CheckRun | CheckSuite] = [*self.comments.values(), *self.check_runs.values()]
        for record in (*kept, *self.check_suites.values()):
            record.repo = new if record.repo == old else record.repo
        for pull in (p for r in self.repositories.values() for p in r.pulls.values() if p.head_repo == old):
            pull.head_repo = new
        return repository

    def repository_by_id(self, wanted: int) -> Repository | None:
        """The repository with GitHub's id `wanted`, whatever its name now."""
        return next((r for r in self.repositories.values() if r.id == wanted), None)

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
        pull.head_sha = pull.head_sha or fake_sha(repo, "pull", number)
        return pull

    def add_comment(
        self, repo: str, number: int, body: str, user: str = "octocat", user_type: str = "User"
    ) -> Comment:
        """A comment made now (by a person, unless `user_type` is "Bot")."""
        at = self.stamp()
        comment = Comment(self.next_id(), repo, number, body, user, user_type, None, at, at)
        self.comments[comment.id] = comment
        return comment

    def add_check_run(self, repo: str, name: str, head_sha: str, **fields: Any) -> CheckRun:
        """A check run on a commit (completed unless a status is given), by another app (`app_id`)
        or railyard's own (None); `conclusion`, `status` as in the API."""
        fields.setdefault("status", "completed")
        at = self.stamp()
        run = CheckRun(self.next_id(), repo, name, head_sha, started_at=at, **fields)
        run.completed_at = at if run.status == "completed" else None
        self.check_runs[run.id] = run
        return run

    def add_check_suite(self, repo: str, head_sha: str, **fields: Any) -> CheckSuite:
        """A check suite on a commit (see CheckSuite)."""
        suite = CheckSuite(self.next_id(), repo, head_sha, **fields)
        self.check_suites[suite.id] = suite
        return suite

    def suite_id(self, repo: str, head_sha: str, app_id: int | None) -> int:
        """The id of the app's suite on the commit: the one set, else one derived from them."""
        return suite_id(self.check_suites.values(), repo, head_sha, None if app_id == self.app_id else app_id)

    def suites_on(self, repo: str, head_sha: str) -> list[tuple[CheckSuite, list[CheckRun]]]:
        """Every suite on a commit with its runs: those set, and one per other app with runs."""
        return suites_on(self.check_runs.values(), self.check_suites.values(), self.app_id, repo, head_sha)

    def add_delivery(self, event: str, **fields: Any) -> Delivery:
        at = fields.pop("delivered_at", None) or self.stamp()
        fields.setdefault("guid", str(uuid.uuid4()))
        delivery = Delivery(
            fields.pop("id", None) or self.next_id(), delivered_at=parse_time(at), event=event, **fields
        )
        self.deliveries.append(delivery)
        return delivery

    def seed(self, data: Json) -> None:
        """Add what a JSON document describes: the body POST /_standin/state takes."""
        self.app_slug = data.get("app", {}).get("slug", self.app_slug)
        self.app_id = data.get("app", {}).get("id", self.app_id)
        if "now" in data:
            self.set_clock(parse_time(data["now"]), data.get("clock_step", 0.0))
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
        self.apps.update({int(app["id"]): app["slug"] for app in data.get("apps", [])})
        for item in data.get("check_runs", []):
            self.add_check_run(**item)
        for item in data.get("check_suites", []):
            self.add_check_suite(**item)
        for item in data.get("comments", []):
            self.add_comment(**item)
        for item in data.get("deliveries", []):
            self.add_delivery(**item)

    def snapshot(self) -> Json:
        """What has been done to GitHub, as JSON (GET /_standin/state)."""
        issues = {name: list(r.issues.values()) for name, r in self.repositories.items()}
        return plain(  # type: ignore[no-any-return]
            {
                "comments": list(self.comments.values()),
                "reactions": self.reactions,
                "check_runs": list(self.check_runs.values()),
                "issues": issues,
                "deliveries": self.deliveries,
                "redelivery_attempts": self.redelivery_attempts,
            }
        )
