"""`handlers.ports.GitHubReads` over dicts a test seeds, recording every call.

Unknown things raise `handlers.errors.Missing` as `app.github.reads` does: 404, and 422 for
a commit GitHub has never seen ("No commit found for SHA"). Repository names are matched
case-insensitively, as GitHub does. The builders give answers in the API's own shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from handlers.errors import Missing
from handlers.ports import Json

Key = tuple[str, str]
REPOSITORY_ID = 1001
"""GitHub's id of the tests' repository: a pulls answer's base and a payload's `repository.id`,
unless a test says another."""
FORK_ID = 4_200
"""GitHub's id of a fork a pulls answer's head is in, unless a test says another."""


def _key(repository: str, name: object) -> Key:
    return (repository.casefold(), str(name))


@dataclass(frozen=True)
class Call:
    """One read a handler made: the method and its arguments after the installation id."""

    method: str
    installation_id: int | None
    args: tuple[object, ...]


@dataclass
class FakeGitHub:
    """GitHub's REST reads, answered from what the test put in."""

    pulls: dict[Key, Json] = field(default_factory=dict)
    issues: dict[Key, Json] = field(default_factory=dict)
    commits: dict[Key, Json] = field(default_factory=dict)
    branches: dict[Key, Json] = field(default_factory=dict)
    deployments_by_environment: dict[Key, list[Json]] = field(default_factory=dict)
    statuses: dict[Key, Json] = field(default_factory=dict)
    installations: dict[str, int] = field(default_factory=dict)
    closing: dict[Key, set[int]] = field(default_factory=dict)
    closing_faults: list[Exception] = field(default_factory=list)
    """Raised, one per read, by the next `closing_issues` reads (GraphQL failing)."""
    calls: list[Call] = field(default_factory=list)
    names: dict[int, str] = field(default_factory=lambda: {REPOSITORY_ID: "acme/app"})
    """Repositories' names now, by id (`GET /repositories/{id}`): the webhooks' repository
    (`tests.fakes.webhooks.REPOSITORY`) to begin with. An id not here is gone, and one whose name
    `installations` gives another installation is out of the asking one's reach."""
    logins: dict[int, str] = field(default_factory=dict)
    """Accounts' logins now, by id (`GET /user/{id}`); an id not here is no account GitHub has."""
    parents: dict[Key, tuple[str, ...]] = field(default_factory=dict)
    """Each commit's parents (see `add_history`), from which comparisons are answered."""
    runs: dict[Key, list[Json]] = field(default_factory=dict)
    """Check runs per commit sha, newest first (see `add_check_run`)."""
    suites: dict[Key, list[Json]] = field(default_factory=dict)
    """Check suites per commit sha (see `add_check_suite`)."""
    commit_pulls: dict[Key, list[int]] = field(default_factory=dict)
    """The merged PRs GitHub says brought a commit, where a test says so; otherwise the merged
    PRs added whose merge commit or head it is (`merged_pulls_of_commit`)."""

    # -- seeding -------------------------------------------------------------------------

    def add_pull(self, repository: str, answer: Json) -> Json:
        """Serve a pulls API answer (see `pull_answer`) for its number."""
        self.pulls[_key(repository, answer["number"])] = answer
        return answer

    def add_issue(self, repository: str, answer: Json) -> Json:
        """Serve an issues API answer (see `issue_answer`) for its number."""
        self.issues[_key(repository, answer["number"])] = answer
        return answer

    def add_commit(self, repository: str, sha: str, *refs: str) -> None:
        """Serve a commit by its sha (and by any other ref that names it)."""
        for ref in (sha, *refs):
            self.commits[_key(repository, ref)] = {"sha": sha}

    def add_history(self, repository: str, *shas: str) -> None:
        """A line of commits, oldest first, each the parent of the next (served by sha too)."""
        for parent, sha in zip(("", *shas), shas, strict=False):
            self.parents[_key(repository, sha)] = (parent,) if parent else ()
            self.add_commit(repository, sha)

    def _ancestors(self, repository: str, sha: str) -> set[str]:
        seen, todo = set(), [sha]
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                todo += self.parents.get(_key(repository, current), ())
        return seen

    def add_branch(self, repository: str, branch: str, sha: str) -> None:
        """Serve a branch whose head is `sha` (its commit too)."""
        self.branches[_key(repository, branch)] = {"name": branch, "commit": {"sha": sha}}
        self.add_commit(repository, sha, branch)

    def add_deployment(
        self, repository: str, deployment_id: int, environment: str, sha: str, state: str | None = None
    ) -> None:
        """Serve a deployment (newest first, as GitHub lists them), with its newest status if given."""
        listed = self.deployments_by_environment.setdefault(_key(repository, environment), [])
        listed.insert(0, {"id": deployment_id, "sha": sha, "environment": environment})
        if state is not None:
            self.statuses[_key(repository, deployment_id)] = {"id": deployment_id * 10, "state": state}

    def add_check_run(
        self,
        repository: str,
        sha: str,
        name: str,
        conclusion: str | None = "success",
        *,
        status: str = "completed",
        app_slug: str = "ci-app",
    ) -> Json:
        """A check run on `sha` by another app (completed with `conclusion` unless a status is given)."""
        listed = self.runs.setdefault(_key(repository, sha), [])
        answer = {
            "id": 5_000 + sum(len(r) for r in self.runs.values()),
            "name": name,
            "head_sha": sha,
            "status": status,
            "conclusion": conclusion if status == "completed" else None,
            "app": {"slug": app_slug},
        }
        listed.insert(0, answer)
        return answer

    def add_check_suite(
        self,
        repository: str,
        sha: str,
        conclusion: str | None,
        *,
        runs: int = 0,
        app_slug: str = "github-actions",
    ) -> Json:
        """A check suite on `sha` (`action_required` with no runs: a workflow held for approval)."""
        answer = {
            "id": 9_000 + sum(len(s) for s in self.suites.values()),
            "head_sha": sha,
            "status": "completed" if conclusion is not None else "queued",
            "conclusion": conclusion,
            "latest_check_runs_count": runs,
            "app": {"slug": app_slug},
        }
        self.suites.setdefault(_key(repository, sha), []).append(answer)
        return answer

    def link_from_sidebar(self, repository: str, pull: int, *issues: int) -> None:
        """Link issues to a PR from the issues' Development sidebar (GraphQL only tells)."""
        self.closing.setdefault(_key(repository, pull), set()).update(issues)

    # -- GitHubReads -----------------------------------------------------------------------

    def _found(
        self, table: dict[Key, Json], what: str, repository: str, name: object, status: int = 404
    ) -> Json:
        try:
            return table[_key(repository, name)]
        except KeyError:
            raise Missing(f"{what} {repository} {name}", status) from None

    async def pull(self, installation_id: int, repository: str, number: int) -> Json:
        """A pull request."""
        self.calls.append(Call("pull", installation_id, (repository, number)))
        return self._found(self.pulls, "pull", repository, number)

    async def issue(self, installation_id: int, repository: str, number: int) -> Json:
        """An issue."""
        self.calls.append(Call("issue", installation_id, (repository, number)))
        return self._found(self.issues, "issue", repository, number)

    async def commit(self, installation_id: int, repository: str, ref: str) -> Json:
        """A commit by sha or ref; 422 for one GitHub does not know."""
        self.calls.append(Call("commit", installation_id, (repository, ref)))
        return self._found(self.commits, "commit", repository, ref, status=422)

    async def branch(self, installation_id: int, repository: str, branch: str) -> Json:
        """A branch with its head commit."""
        self.calls.append(Call("branch", installation_id, (repository, branch)))
        return self._found(self.branches, "branch", repository, branch)

    async def repository_name(self, installation_id: int, repository_id: int) -> str:
        """The repository's name now, by its id: `Missing` when it is gone, and, as on github.com,
        to an installation other than the one `installations` gives its name now (a repository
        transferred to an owner with another installation is out of the old one's reach)."""
        self.calls.append(Call("repository_name", installation_id, (repository_id,)))
        name = self.names.get(repository_id)
        reached_by = self.installations.get(name.casefold()) if name is not None else None
        if name is None or reached_by not in (None, installation_id):
            raise Missing(f"repository {repository_id}")
        return name

    async def login_of(self, installation_id: int, account_id: int) -> str:
        """The account's login now, by its id; `Missing` for an id GitHub has no account for."""
        self.calls.append(Call("login_of", installation_id, (account_id,)))
        try:
            return self.logins[account_id]
        except KeyError:
            raise Missing(f"user {account_id}") from None

    async def closing_issues(self, installation_id: int, repository: str, number: int) -> set[int]:
        """The issues of the repository the PR closes (those linked from the sidebar, here)."""
        self.calls.append(Call("closing_issues", installation_id, (repository, number)))
        if self.closing_faults:
            raise self.closing_faults.pop(0)
        return set(self.closing.get(_key(repository, number), set()))

    async def installation_of(self, repository: str) -> int:
        """The app's installation on the repository."""
        self.calls.append(Call("installation_of", None, (repository,)))
        try:
            return self.installations[repository.casefold()]
        except KeyError:
            raise Missing(f"installation of {repository}") from None

    async def deployments(
        self, installation_id: int, repository: str, environment: str, limit: int
    ) -> list[Json]:
        """The newest deployments to an environment, newest first."""
        self.calls.append(Call("deployments", installation_id, (repository, environment, limit)))
        return list(self.deployments_by_environment.get(_key(repository, environment), []))[:limit]

    async def latest_status(self, installation_id: int, repository: str, deployment_id: int) -> Json | None:
        """A deployment's newest status, or None."""
        self.calls.append(Call("latest_status", installation_id, (repository, deployment_id)))
        return self.statuses.get(_key(repository, deployment_id))

    async def compare_commits(self, installation_id: int, repository: str, base: str, head: str) -> list[str]:
        """The commits `head` has and `base` does not, from the history seeded (oldest first)."""
        self.calls.append(Call("compare_commits", installation_id, (repository, base, head)))
        for sha in (base, head):
            if _key(repository, sha) not in self.parents:
                raise Missing(f"compare {repository} {base}...{head}", 404)
        ahead = self._ancestors(repository, head) - self._ancestors(repository, base)
        return sorted(ahead, key=lambda sha: len(self._ancestors(repository, sha)))

    async def merged_pulls_of_commit(self, installation_id: int, repository: str, sha: str) -> list[int]:
        """The merged PRs that brought `sha`: as seeded in `commit_pulls`, else those added whose
        merge commit or head it is (a commit no PR merged: none)."""
        self.calls.append(Call("merged_pulls_of_commit", installation_id, (repository, sha)))
        seeded = self.commit_pulls.get(_key(repository, sha))
        if seeded is not None:
            return list(seeded)
        ours = [
            a for (repo, _), a in self.pulls.items() if repo == repository.casefold() and a.get("merged_at")
        ]
        return sorted(int(a["number"]) for a in ours if sha in (a.get("merge_commit_sha"), a["head"]["sha"]))

    async def check_runs(self, installation_id: int, repository: str, sha: str) -> list[Json]:
        """Every check run seeded on the commit (none: an empty list, as GitHub answers)."""
        self.calls.append(Call("check_runs", installation_id, (repository, sha)))
        return list(self.runs.get(_key(repository, sha), []))

    async def check_suites(self, installation_id: int, repository: str, sha: str) -> list[Json]:
        """Every check suite seeded on the commit."""
        self.calls.append(Call("check_suites", installation_id, (repository, sha)))
        return list(self.suites.get(_key(repository, sha), []))

    # -- what tests look at ------------------------------------------------------------

    def called(self, method: str) -> list[Call]:
        """The calls made to one method, in order."""
        return [call for call in self.calls if call.method == method]


def user(login: str, account_id: int, kind: str = "User") -> dict[str, Any]:
    """A user object as GitHub embeds it."""
    return {"login": login, "id": account_id, "type": kind}


def issue_answer(
    number: int,
    *,
    body: str = "Stop retrying forever.",
    labels: tuple[str, ...] = (),
    assignees: tuple[tuple[str, int], ...] = (),
) -> dict[str, Any]:
    """`GET /repos/{repo}/issues/{number}`, the fields railyard reads."""
    return {
        "number": number,
        "body": body,
        "state": "open",
        "labels": [{"name": name} for name in labels],
        "assignees": [user(login, account_id) for login, account_id in assignees],
    }


def pull_answer(
    repository: str,
    number: int,
    *,
    body: str | None = None,
    head_ref: str = "feature",
    head_sha: str = "a" * 40,
    head_repository: str | None = None,
    head_repository_id: int | None = None,
    repository_id: int = REPOSITORY_ID,
    state: str = "open",
    merged_at: str | None = None,
    merge_commit: str | None = None,
    updated_at: str = "2026-11-30T10:00:00Z",
    mergeable: bool | None = None,
    author: str = "coder-bot[bot]",
    base_ref: str = "main",
    title: str = "A pull request",
) -> dict[str, Any]:
    """`GET /repos/{repo}/pulls/{number}` (and a `pull_request` payload's PR), the fields railyard reads.

    The head's repository is `repository` (id `repository_id`) unless `head_repository` names
    another, which is a fork with an id of its own unless `head_repository_id` says which."""
    if head_repository_id is None:
        own = head_repository is None or head_repository.casefold() == repository.casefold()
        head_repository_id = repository_id if own else FORK_ID
    return {
        "number": number,
        "html_url": f"https://github.com/{repository}/pull/{number}",
        "state": state,
        "merged": merged_at is not None,
        "merged_at": merged_at,
        "merge_commit_sha": merge_commit,
        "body": body,
        "title": title,
        "updated_at": updated_at,
        "mergeable": mergeable,
        "base": {"ref": base_ref, "repo": {"id": repository_id, "full_name": repository}},
        "user": user(author, 900, "Bot" if author.endswith("[bot]") else "User"),
        "head": {
            "ref": head_ref,
            "sha": head_sha,
            "repo": {"id": head_repository_id, "full_name": head_repository or repository},
        },
    }
