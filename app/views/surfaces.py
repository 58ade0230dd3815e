"""The surfaces that show a ticket on GitHub: its status comment and its PRs' check-runs.

Every change to a ticket enqueues both through the outbox (`TicketService` calls
`surfaces_for` in the change's transaction). The effects are coalescing: they carry only
which comment or which commit, and the renderers here read the latest state when the outbox
writes, so a burst of changes becomes one write per surface.
"""

from __future__ import annotations

import asyncio
import base64
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from app.github.client import GitHubClient, GitHubError
from app.github.config import (
    CONFIG_PATH,
    ConfigError,
    ConfigLoader,
    LoadedConfig,
    UnlinkedConclusion,
    parse_repository_config,
)
from app.github.roles import CannotVerify, RoleResolver
from app.runtime.outbox import Renderer
from app.store.database import Database
from app.store.effects import Effect, effect_result
from app.store.pulls import stored_pull
from app.store.tickets import TicketService
from app.views.render import StatusView, render_check_summary, render_status_comment
from app.views.status_json import status_comment_body
from handlers.ports import PullRequest
from policies.checks import CHECK_NAME, Conclusion, Linked, Verdict, verdict
from policies.model import Ticket, TicketKey
from policies.states import Role

STATUS_COMMENT, CHECK_RUN = "status_comment", "check_run"
log = structlog.get_logger(__name__)


def status_key(repository: str, number: int) -> str:
    """The dedupe key of a ticket's one status comment."""
    return f"status:{repository.casefold()}#{number}"


def status_comment(installation_id: int, repository: str, number: int) -> Effect:
    """Write (create once, then edit) the ticket's status comment from its latest state."""
    key = status_key(repository, number)
    return Effect(STATUS_COMMENT, installation_id, repository, key, {"number": number}, coalesce=True)


def check_run(
    installation_id: int, repository: str, pull: int, head_sha: str, *, merge_group: bool = False
) -> Effect:
    """Write the `railyard` check on one commit of a PR (its head, or a merge-queue commit)."""
    key = f"check:{repository.casefold()}:{pull}:{head_sha}"
    payload = {"pull_request": pull, "head_sha": head_sha, "merge_group": merge_group}
    return Effect(CHECK_RUN, installation_id, repository, key, payload, coalesce=True)


def surfaces_for(installation_id: int, ticket: Ticket) -> list[Effect]:
    """The status comment, and the check on the head of every PR that links the ticket."""
    repository = ticket.key.repository
    effects = [status_comment(installation_id, repository, ticket.key.number)]
    for pr in sorted(ticket.rails.pull_requests.values(), key=lambda p: p.number):
        if pr.head_sha and (pr.merged_while_linked or (pr.linked and pr.open)):
            effects.append(check_run(installation_id, repository, pr.number, pr.head_sha))
    return effects


class Surfaces:
    """Renders the two surfaces from the latest state, for the outbox (text in `app.views.render`)."""

    def __init__(
        self,
        database: Database,
        tickets: TicketService,
        loader: ConfigLoader | None,
        github: GitHubClient | None,
    ) -> None:
        self.database, self.tickets, self.loader, self.github = database, tickets, loader, github
        self.proposed = ProposedConfigs(github) if github is not None else None

    def renderers(self) -> dict[str, Renderer]:
        """The outbox renderers, by effect kind."""
        return {STATUS_COMMENT: self.status_comment, CHECK_RUN: self.check_run}

    async def status_comment(self, row: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The comment's body now (ending in the hidden status-json line); None when the issue is
        not (or no longer) a ticket."""
        number = int(row["payload"]["number"])
        view = await self._view(row["installation_id"], row["repository"], number)
        if view is None:
            return None
        return {"number": number, "body": status_comment_body(view)}

    async def check_run(self, row: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The check's conclusion, title and summary for the PR's tickets at this commit."""
        installation, repository = row["installation_id"], row["repository"]
        pull, head_sha = int(row["payload"]["pull_request"]), str(row["payload"]["head_sha"])
        stored = await asyncio.to_thread(self._stored_pull, repository, pull)
        numbers = sorted(stored[1]) if stored else []
        loaded = await self._config(installation, repository)
        tickets = [Linked(n, await self._load(repository, n)) for n in numbers]
        # A merge-queue commit carries the PR's work: judge it by what was accepted at the PR's head.
        judged_at = stored[0].head_sha if row["payload"].get("merge_group") and stored else head_sha
        result = verdict(
            judged_at,
            tickets,
            unlinked_passes=loaded.config.checks.unlinked is UnlinkedConclusion.SUCCESS,
            author_only_runner=await self._only_runner(installation, repository, stored, loaded),
        )
        problems = await self._proposed(installation, repository, pull, judged_at or head_sha)
        if problems:
            result = blocked_by_config(result, problems)
        bodies = [await self._linked_body(installation, repository, n) for n in numbers]
        link = next((link for link, _ in bodies if link), None)
        return _check_payload(head_sha, result, bodies, link, problems)

    async def _proposed(
        self, installation: int, repository: str, pull: int, head_sha: str
    ) -> tuple[str, ...]:
        """The problems of the `.github/railyard.yml` the PR proposes at its head, if it changes it."""
        if self.proposed is None:
            return ()
        return await self.proposed.problems(installation, repository, pull, head_sha)

    async def _linked_body(self, installation: int, repository: str, number: int) -> tuple[str, str | None]:
        view = await self._view(installation, repository, number)
        link = await asyncio.to_thread(self._status_link, repository, number)
        # The check quotes the visible part only: one ticket's status-json line lives on its issue.
        return link or "", render_status_comment(view) if view else None

    async def _view(self, installation: int, repository: str, number: int) -> StatusView | None:
        key = TicketKey(repository, number)
        ticket = await self._load(repository, number)
        if ticket is None or not ticket.exists:
            return None
        history = await asyncio.to_thread(self.tickets.history, key)
        loaded = await self._config(installation, repository)
        return StatusView(
            ticket,
            tuple(recorded.event for recorded in history),
            config_error=loaded.error,
            issue_closed=ticket.closed,
        )

    async def _load(self, repository: str, number: int) -> Ticket | None:
        return await asyncio.to_thread(self.tickets.load, TicketKey(repository, number))

    async def _config(self, installation: int, repository: str) -> LoadedConfig:
        assert self.loader is not None, "surfaces are rendered only with app credentials"
        return await self.loader.load(installation, repository)

    async def _only_runner(
        self,
        installation: int,
        repository: str,
        stored: tuple[PullRequest, set[int]] | None,
        loaded: LoadedConfig,
    ) -> bool:
        """Whether the PR's author holds the runner role and no other (only asked of unlinked PRs)."""
        if stored is None or stored[0].author is None or stored[1] or self.github is None:
            return False
        author = stored[0].author
        resolver = RoleResolver(self.github, installation, repository)
        try:
            return await resolver.roles(author, loaded.config.roles) == frozenset({Role.RUNNER})
        except CannotVerify:
            return True  # never pass a PR on roles railyard could not check

    def _status_link(self, repository: str, number: int) -> str | None:
        """The status comment's address, once it has been written."""
        with self.database.read() as connection:
            result = effect_result(connection, status_key(repository, number))
        return (result or {}).get("html_url")

    def _stored_pull(self, repository: str, number: int) -> tuple[PullRequest, set[int]] | None:
        with self.database.read() as connection:
            return stored_pull(connection, repository, number)


def blocked_by_config(result: Verdict, problems: Sequence[str]) -> Verdict:
    """The check on a PR whose `.github/railyard.yml` cannot be used: `action_required`, like any
    other reason not to merge (once merged, every command would be refused), the first problem
    as the title; the tickets' lines are kept."""
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return Verdict(Conclusion.ACTION_REQUIRED, f"{CONFIG_PATH} in this PR: {problems[0]}{more}", result.lines)


def _check_payload(
    head_sha: str,
    result: Verdict,
    bodies: Sequence[tuple[str, str | None]],
    link: str | None,
    problems: Sequence[str] = (),
) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "name": CHECK_NAME,
        "head_sha": head_sha,
        "status": "completed",
        "conclusion": result.conclusion.value,
        "output": {
            "title": result.title[:250],
            "summary": render_check_summary(result, bodies, config_problems=problems),
        },
    }
    if link:
        payload["details_url"] = link
    return payload


class ProposedConfigs:
    """The problems of `.github/railyard.yml` as a PR's head has it, when the PR changes the file.

    Asked by the check's renderer, so no handler needs to know: one `pulls/{n}/files` read per
    head commit (more pages only past 100 changed files), and the file itself only when the PR
    changes it; the answer is kept in memory per head, so re-rendering the check costs nothing.
    """

    MAX_PAGES = 30  # GitHub lists at most 3,000 files of a PR

    def __init__(self, github: GitHubClient, cache_size: int = 1024) -> None:
        """`github` reads the PR's files and the file at its head."""
        self._github, self._cache_size = github, cache_size
        self._by_head: OrderedDict[str, tuple[str, ...]] = OrderedDict()

    async def problems(self, installation: int, repository: str, pull: int, head_sha: str) -> tuple[str, ...]:
        """The file's problems at `head_sha` (the server's messages, one a line); () if fine or unchanged."""
        key = f"{repository.casefold()}#{pull}@{head_sha}"
        if key in self._by_head:
            self._by_head.move_to_end(key)
            return self._by_head[key]
        found = await self._read(installation, repository, pull, head_sha)
        self._by_head[key] = found
        if len(self._by_head) > self._cache_size:
            self._by_head.popitem(last=False)
        return found

    async def _read(self, installation: int, repository: str, pull: int, head_sha: str) -> tuple[str, ...]:
        try:
            if not await self._changes_config(installation, repository, pull):
                return ()
            found = await self._github.call(
                "get_file", installation, repository=repository, path=CONFIG_PATH, params={"ref": head_sha}
            )
        except GitHubError as error:
            # The PR or its head is gone (404, 422), or the app cannot read it: the check is still
            # written, judged on its tickets. Transient failures are raised, and the effect retried.
            if error.status not in (404, 422):
                log.warning(
                    "cannot read the PR's configuration file",
                    repository=repository,
                    pull=pull,
                    status=error.status,
                )
            return ()
        if not isinstance(found, dict) or found.get("type") != "file":
            return ()
        text = base64.b64decode(found.get("content") or "").decode("utf-8", errors="replace")
        try:
            parse_repository_config(text)
        except ConfigError as error:
            return tuple(error.message.splitlines())
        return ()

    async def _changes_config(self, installation: int, repository: str, pull: int) -> bool:
        """Whether the PR adds or modifies the file (a PR that removes it leaves the defaults)."""
        params: Mapping[str, Any] | None = {"per_page": 100}
        for _ in range(self.MAX_PAGES):
            page, params = await self._github.call_page(
                "list_pull_files", installation, params=params, repository=repository, number=pull
            )
            for item in page if isinstance(page, list) else []:
                if (
                    isinstance(item, dict)
                    and item.get("filename") == CONFIG_PATH
                    and item.get("status") != "removed"
                ):
                    return True
            if params is None:
                return False
        return False
