"""The handlers' GitHub ports over the client: reads, the repository's rules, and roles.

GitHub's "there is no such thing" (404, and 422 for an unknown commit) becomes
`handlers.errors.Missing`; every other failure keeps its own type (transient or not).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from decimal import Decimal
from typing import Any

import structlog

from app.github.client import GitHubClient, GitHubError, NotFound
from app.github.config import CONFIG_PATH
from app.github.config_loader import ConfigLoader, LoadedConfig, RepoFile, repo_file, shown_error
from app.github.roles import RoleResolver
from handlers.errors import Missing
from handlers.ports import Json, RoleEntry, Rules
from policies.evidence import canonical_cost
from policies.states import Role

log = structlog.get_logger(__name__)

CLOSING_ISSUES = """
query($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      closingIssuesReferences(first: 50) { nodes { number repository { nameWithOwner } } }
    }
  }
}
"""


def _same_repository_numbers(data: Json, repository: str) -> set[int]:
    """The numbers of the closing issue references that are in `repository` itself."""
    pull = (data.get("repository") or {}).get("pullRequest") or {}
    nodes = (pull.get("closingIssuesReferences") or {}).get("nodes") or []
    wanted = repository.casefold()
    return {
        node["number"]
        for node in nodes
        if isinstance(node, dict)
        and isinstance(node.get("number"), int)
        and str((node.get("repository") or {}).get("nameWithOwner", "")).casefold() == wanted
    }


COMPARE_PAGES = 100
"""The most pages of one comparison railyard reads (10,000 commits)."""


class GitHubReadsAdapter:
    """`handlers.ports.GitHubReads` over the app's client."""

    def __init__(self, github: GitHubClient) -> None:
        self._github = github

    async def _get(
        self, endpoint: str, installation_id: int | None, missing: Sequence[int], **args: Any
    ) -> Any:
        try:
            return await self._github.call(endpoint, installation_id, **args)
        except GitHubError as error:
            if error.status in missing:
                raise Missing(f"{endpoint} {args}", error.status) from error
            raise

    async def pull(self, installation_id: int, repository: str, number: int) -> Json:
        """A pull request."""
        return await self._get("get_pull", installation_id, (404,), repository=repository, number=number)  # type: ignore[no-any-return]

    async def issue(self, installation_id: int, repository: str, number: int) -> Json:
        """An issue."""
        return await self._get("get_issue", installation_id, (404,), repository=repository, number=number)  # type: ignore[no-any-return]

    async def commit(self, installation_id: int, repository: str, ref: str) -> Json:
        """A commit (422: "No commit found for SHA")."""
        return await self._get("get_commit", installation_id, (404, 422), repository=repository, ref=ref)  # type: ignore[no-any-return]

    async def branch(self, installation_id: int, repository: str, branch: str) -> Json:
        """A branch and its head."""
        return await self._get("get_branch", installation_id, (404,), repository=repository, branch=branch)  # type: ignore[no-any-return]

    async def login_of(self, installation_id: int, account_id: int) -> str:
        """The account's login now, asked by its id; `Missing` when GitHub has no such account."""
        found = await self._get("get_user_by_id", installation_id, (404,), account_id=str(account_id))
        return str(found["login"])

    async def repository_name(self, installation_id: int, repository_id: int) -> str:
        """The repository's name now, asked by its id; `Missing` when GitHub no longer has it or
        it is out of the installation's reach (404; 403 that is not a rate limit, 451 access
        blocked), as the outbox takes those answers (`app.runtime.write_target`)."""
        found = await self._get(
            "get_repository_by_id", installation_id, (404, 403, 451), repository_id=str(repository_id)
        )
        return str(found["full_name"])

    async def installation_of(self, repository: str) -> int:
        """The app's installation on the repository."""
        found = await self._get("get_repository_installation", None, (404,), repository=repository)
        return int(found["id"])

    async def closing_issues(self, installation_id: int, repository: str, number: int) -> set[int]:
        """The issues of `repository` the PR closes (body keywords and Development sidebar alike)."""
        owner, _, name = repository.partition("/")
        variables = {"owner": owner, "name": name, "number": number}
        try:
            data = await self._github.graphql(installation_id, CLOSING_ISSUES, variables)
        except NotFound as error:
            raise Missing(f"pull request {repository}#{number}") from error
        except GitHubError as error:
            # An answer that will not change on retry (a permission GitHub refuses, say): the
            # sidebar's links are unknown, and the body's must not be lost for them.
            log.warning("could not read a pull request's closing issues", error=str(error), number=number)
            return set()
        return _same_repository_numbers(data, repository)

    async def deployments(
        self, installation_id: int, repository: str, environment: str, limit: int
    ) -> list[Json]:
        """The newest deployments to an environment."""
        params = {"environment": environment, "per_page": limit}
        listed = await self._get(
            "list_deployments", installation_id, (404,), repository=repository, params=params
        )
        return [item for item in listed if isinstance(item, dict)] if isinstance(listed, list) else []

    async def latest_status(self, installation_id: int, repository: str, deployment_id: int) -> Json | None:
        """A deployment's newest status."""
        statuses = await self._get(
            "list_deployment_statuses", installation_id, (404,), repository=repository,
            deployment_id=deployment_id, params={"per_page": 1},
        )  # fmt: skip
        return (
            statuses[0] if isinstance(statuses, list) and statuses and isinstance(statuses[0], dict) else None
        )

    async def compare_commits(self, installation_id: int, repository: str, base: str, head: str) -> list[str]:
        """The commits `head` has and `base` does not, following every page (100 a page, at most
        `COMPARE_PAGES` pages: GitHub's own comparison stops far short of that). `Missing` too
        when the pages list fewer commits than GitHub counts (`total_commits`): a range cut
        short would leave out its newest merges, and is never taken for the whole."""
        shas: list[str] = []
        counted: int | None = None
        params: dict[str, str] | None = {"per_page": "100"}
        for _ in range(COMPARE_PAGES):
            if params is None:
                break
            try:
                page, params = await self._github.call_page(
                    "compare", installation_id, params=params, repository=repository, base=base, head=head
                )
            except GitHubError as error:
                if error.status in (404, 422):
                    raise Missing(f"compare {repository} {base}...{head}", error.status) from error
                raise
            commits = page.get("commits") if isinstance(page, dict) else None
            shas += [str(c["sha"]) for c in commits or [] if isinstance(c, dict) and c.get("sha")]
            total = page.get("total_commits") if isinstance(page, dict) else None
            counted = total if isinstance(total, int) else counted
        if params is not None or (counted is not None and len(set(shas)) < counted):
            raise Missing(f"compare {repository} {base}...{head}: {counted} commits, {len(shas)} listed", 422)
        return shas

    async def merged_pulls_of_commit(self, installation_id: int, repository: str, sha: str) -> list[int]:
        """The merged pull requests GitHub says brought commit `sha` (one page of 100: a commit
        is brought by one); none for a commit GitHub does not have (422)."""
        try:
            listed = await self._get(
                "list_commit_pulls", installation_id, (404, 422), repository=repository, sha=sha,
                params={"per_page": 100},
            )  # fmt: skip
        except Missing:
            return []
        items = [p for p in listed if isinstance(p, dict)] if isinstance(listed, list) else []
        return [int(p["number"]) for p in items if p.get("merged_at") and isinstance(p.get("number"), int)]

    async def check_runs(self, installation_id: int, repository: str, sha: str) -> list[Json]:
        """Every check run on the commit, following every page."""
        return await self._every("list_check_runs", "check_runs", installation_id, repository, sha)

    async def check_suites(self, installation_id: int, repository: str, sha: str) -> list[Json]:
        """Every check suite on the commit, following every page."""
        return await self._every("list_check_suites", "check_suites", installation_id, repository, sha)

    async def _every(
        self, endpoint: str, key: str, installation_id: int, repository: str, sha: str
    ) -> list[Json]:
        """The `key` items of every page of a commit's listing (GitHub's Link header, 100 a page)."""
        items: list[Json] = []
        params: dict[str, str] | None = {"per_page": "100"}
        while params is not None:
            try:
                page, params = await self._github.call_page(
                    endpoint, installation_id, params=params, repository=repository, ref=sha
                )
            except GitHubError as error:
                if error.status in (404, 422):
                    raise Missing(f"{endpoint} {repository} {sha}", error.status) from error
                raise
            found = page.get(key) if isinstance(page, dict) else None
            items.extend(item for item in found or [] if isinstance(item, dict))
        return items


def config_fetcher(github: GitHubClient) -> Callable[[int, str], Awaitable[RepoFile | None]]:
    """Read `.github/railyard.yml` from a repository's default branch (None when absent)."""

    async def fetch(installation_id: int, repository: str) -> RepoFile | None:
        try:
            found = await github.call("get_file", installation_id, repository=repository, path=CONFIG_PATH)
        except GitHubError as error:
            if error.status == 404:
                return None
            raise
        return repo_file(found)

    return fetch


def rules_from(loaded: LoadedConfig) -> Rules:
    """What handlers decide with, from the configuration in force."""
    config = loaded.config
    return Rules(
        policy_version=loaded.policy_version,
        error=shown_error(loaded.error),  # replies quote no other repository's file
        ticket_label=config.tickets.label,
        no_code_label=config.tickets.no_code_label,
        branch_pattern=config.tickets.branch_pattern,
        environments=tuple(config.deployments.environments),
        gate=tuple(config.deployments.gate),
        unticketed=config.deployments.unticketed.value,
        required_checks=tuple(config.checks.required),
        max_silence_minutes=config.claims.max_silence_minutes,
        max_attempt_hours=config.claims.max_attempt_hours,
        max_review_wait_hours=config.reviews.max_wait_hours,
        high_risk_labels=tuple(config.high_risk.labels),
        self_verification=config.self_verification,
        commands_per_hour=config.limits.commands_per_hour,
        outsider_requests_per_hour=config.limits.outsider_requests_per_hour,
        attempts_per_ticket=config.limits.attempts_per_ticket,
        cost_per_ticket=_usd(config.limits.cost_per_ticket),
        cost_per_runner_month=_usd(config.limits.cost_per_runner_month),
        roles={
            role: tuple(RoleEntry(e.login, e.org, e.slug) for e in entries)
            for role, entries in config.roles.items()
        },
        acceptance_expires_after_days=config.acceptance.expires_after_days,
        acceptance_ci=config.acceptance.ci.value,
        acceptance_by=config.acceptance.by.value,
        agents=tuple(RoleEntry(e.login, e.org, e.slug) for e in config.agents),
    )


class ConfigsAdapter:
    """`handlers.ports.Configs` over the loader (which parses each blob once)."""

    def __init__(self, loader: ConfigLoader) -> None:
        self.loader = loader

    async def load(self, installation_id: int, repository: str, *, fresh: bool = False) -> Rules:
        """The rules in force."""
        return rules_from(await self.loader.load(installation_id, repository, fresh=fresh))

    def forget(self, repository: str) -> None:
        """Read the file again next time."""
        self.loader.forget(repository)


class RolesAdapter:
    """`handlers.ports.Roles`: team memberships and permissions asked of GitHub now."""

    def __init__(self, github: GitHubClient) -> None:
        self._github = github

    async def roles(
        self,
        installation_id: int,
        repository: str,
        login: str,
        rules: Rules,
        among: Iterable[Role],
        *,
        first_only: bool = False,
        outsider: bool = False,
    ) -> frozenset[Role]:
        """The roles `login` holds now, of `among` (only the first held, in order, if asked)."""
        return await RoleResolver(self._github, installation_id, repository).roles(
            login, rules.roles, among=among, first_only=first_only, stranger=outsider
        )

    async def listed(
        self, installation_id: int, repository: str, login: str, entries: tuple[RoleEntry, ...]
    ) -> bool:
        """Whether `entries` (the `agents` list, say) name `login` or a team it is active in now."""
        return await RoleResolver(self._github, installation_id, repository).listed(login, entries)


def _usd(amount: Decimal | None) -> str | None:
    """A budget as the core compares it: an exact decimal string of US dollars."""
    return canonical_cost(amount) if amount is not None else None
