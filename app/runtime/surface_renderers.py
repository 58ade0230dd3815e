"""The renderers of the surfaces that show a ticket on GitHub: its status comment and its PRs'
check-runs.

Every change to a ticket enqueues both through the outbox (the store calls
`app.contracts.effect_types.surfaces_for` in the change's transaction). The effects are
coalescing: they carry only which comment or which commit, and the renderers here read the
latest state when the outbox writes, so a burst of changes becomes one write per surface.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import structlog

from app.contracts.effect_types import RENDER_NOTES, Effect, EffectKind, project_key, status_key
from app.contracts.effect_types import check_run as check_run_effect
from app.github.client import GitHubClient
from app.github.config import CONFIG_PATH, UnlinkedConclusion
from app.github.config_loader import ConfigLoader, LoadedConfig, shown_error
from app.github.config_projects import ProjectConfig
from app.github.proposed_config import ProposedConfigs
from app.github.roles import CannotVerify, RoleResolver
from app.runtime.outbox import Renderer
from app.runtime.project_sync import problems_in, project_name, wanted_payload
from app.store.database import Database
from app.store.effects import effect_result, enqueue
from app.store.hops import off_loop
from app.store.pulls import pulls_where, stored_pull
from app.store.signs import read_shown_now
from app.store.tickets import TicketService
from app.views.project_text import project_options
from app.views.render import StatusView, render_check_summary, render_status_comment
from app.views.status_json import status_comment_body
from handlers.acceptance import recheck
from handlers.errors import Missing
from handlers.payloads import dig_str
from handlers.ports import PullRequest, Services
from policies.checks import CHECK_NAME, Conclusion, Linked, Verdict, outsiders_pull, verdict
from policies.links import capped, linked_issues
from policies.model import Ticket, TicketKey
from policies.projects import Problem, ProjectRail
from policies.states import Role, WorkState

log = structlog.get_logger(__name__)

RUNNER_ONLY_SECONDS = 600.0
"""How long an unlinked PR's author found without the runner role is taken to be without it:
anyone may push to their own fork's PR, and a role-less account's roles are asked again once in
ten minutes elsewhere too (docs/security.md). An author holding the runner role is asked at
every push, so a role taken from a runner shows at once; the runner role given to an account
shows at its first push ten minutes after it was last asked."""
RUNNER_ONLY_KEPT = 4096
ACCEPTED_KEPT = 10
"""Tickets accepted at one commit whose judgement its check keeps (the newest numbers)."""
SHARED_AT_MOST = 8
"""Open PRs on one head commit judged for its check at most; past them the check does not pass
(anyone may open PRs on a commit: each costs the check's reads)."""


@dataclass(frozen=True)
class Judged:
    """One PR's verdict at a commit, with what its check's summary shows."""

    result: Verdict
    tickets: list[Linked]
    bodies: list[tuple[str, str | None]]
    link: str | None
    problems: Sequence[str]


class Surfaces:
    """Renders the two surfaces from the latest state, for the outbox (text in `app.views.render`)."""

    def __init__(
        self,
        database: Database,
        tickets: TicketService,
        loader: ConfigLoader | None,
        github: GitHubClient | None,
        ports: Services | None = None,
    ) -> None:
        self.database, self.tickets, self.loader, self.github = database, tickets, loader, github
        self.ports = ports  # the handlers' ports: an acceptance is judged as a handler judges it
        self._clock = ports.clock if ports is not None else time.time
        self.proposed = ProposedConfigs(github, loader) if github is not None and loader is not None else None
        # (repository, PR, author, policy version) -> when its author was found without the runner role
        self._not_runner: OrderedDict[tuple[int | str, int, str, str], float] = OrderedDict()

    def renderers(self) -> dict[str, Renderer]:
        """The outbox renderers, by effect kind."""
        return {
            EffectKind.STATUS_COMMENT: self.status_comment,
            EffectKind.CHECK_RUN: self.check_run,
            EffectKind.PROJECT_FIELDS: self.project_fields,
        }

    async def status_comment(self, row: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The comment's body now (ending in the hidden status-json line); None when the issue is
        not (or no longer) a ticket."""
        number = int(row["payload"]["number"])
        view = await self._view(row["installation_id"], row["repository"], number)
        if view is None:
            return None
        return {"number": number, "body": status_comment_body(view)}

    async def project_fields(self, row: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """What each configured project's fields should show now; None when the file names no
        project or the issue is not (or no longer) a ticket."""
        number = int(row["payload"]["number"])
        ticket = await self._load(row["repository"], number)
        if ticket is None or not ticket.exists:
            return None
        projects = (await self._config(row["installation_id"], row["repository"])).config.projects
        if not projects:
            return None
        options = project_options(ticket)
        return {
            "number": number,
            "projects": [
                {
                    "owner": project.owner,
                    "number": project.number,
                    "add_items": project.add_items,
                    "wanted": wanted_payload(options, _field_names(project)),
                }
                for project in projects
            ],
        }

    async def check_run(self, row: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The check on one commit: GitHub keeps check runs per commit, and a PR's branch
        protection reads the newest `railyard` run on its head whichever PR it was written for,
        so the commit is judged by every open PR whose head it is (at most `SHARED_AT_MOST`), and
        by the effect's own PR's tickets accepted at it (a force-push back to an accepted commit
        finds no success a lapse took back), the strictest verdict shown; by the effect's own PR
        alone when neither (its head, a merge-queue commit, a PR railyard has no row for)."""
        installation, repository, asked = row["installation_id"], row["repository"], row["payload"]
        pull, head_sha = int(asked["pull_request"]), str(asked["head_sha"])
        merge_group = bool(asked.get("merge_group"))
        per_commit = check_run_effect(installation, repository, pull, head_sha, merge_group=merge_group)
        if row.get("dedupe_key", per_commit.dedupe_key) != per_commit.dedupe_key:
            # Kept under a PR's key before one run per commit: written under the commit's, once.
            await off_loop(self._enqueue, per_commit)
            return None
        sharing = [] if merge_group else await off_loop(self._open_at_head, repository, head_sha)
        loaded = await self._config(installation, repository)
        judged = [
            await self._judged(installation, repository, number, head_sha, merge_group, loaded, None)
            for number in sharing[:SHARED_AT_MOST]
        ]
        # Tickets accepted at this commit: the asking PR's, and those an earlier write here judged
        # (kept in its result): whichever PR asks next, a lapse at an accepted commit stays shown.
        notes = (row.get("result") or {}).get("notes") or {}
        kept = {n for n in notes.get("accepted") or [] if isinstance(n, int) and not isinstance(n, bool)}
        asking = [] if merge_group or pull in sharing else await self._accepted_at(repository, pull, head_sha)
        accepted = sorted(kept | set(asking))[-ACCEPTED_KEPT:]
        if accepted:
            judged.append(
                await self._judged(installation, repository, pull, head_sha, False, loaded, accepted)
            )
        if not judged:
            if asked.get("shared_only"):
                return None  # the PR left the commit and nothing else is judged there
            judged = [await self._judged(installation, repository, pull, head_sha, merge_group, loaded, None)]
        chosen = next((j for j in judged if j.result.conclusion is not Conclusion.SUCCESS), judged[0])
        result = chosen.result
        if len(sharing) > SHARED_AT_MOST:
            many = f"{len(sharing)} open pull requests share this commit"
            result = Verdict(Conclusion.ACTION_REQUIRED, many, result.lines)
        payload = _check_payload(head_sha, result, chosen.bodies, chosen.link, chosen.problems)
        kept_notes: dict[str, Any] = {"accepted": accepted} if accepted else {}
        if any(item.validity is not None and item.validity.unverified for j in judged for item in j.tickets):
            # Written again by the acceptance re-check once GitHub confirms the role (`rechecks`).
            kept_notes["unverified"] = True
        if kept_notes:
            payload[RENDER_NOTES] = kept_notes
        return payload

    async def _accepted_at(self, repository: str, pull: int, head_sha: str) -> list[int]:
        """The tickets `pull` links whose acceptance binds `head_sha` (the accepted commit)."""
        stored = await off_loop(self._stored_pull, repository, pull)
        found = []
        for number in sorted(stored[1]) if stored else []:
            ticket = await self._load(repository, number)
            review = ticket.review if ticket is not None else None
            if (
                review is not None
                and review.commit is not None
                and review.commit.casefold() == head_sha.casefold()
            ):
                found.append(number)
        return found

    async def _judged(
        self,
        installation: int,
        repository: str,
        pull: int,
        head_sha: str,
        merge_group: bool,
        loaded: LoadedConfig,
        only: Sequence[int] | None,
    ) -> Judged:
        """One PR's verdict at `head_sha`: its tickets (or only `only` of them), judged there."""
        stored = await off_loop(self._stored_pull, repository, pull)
        numbers = list(only) if only is not None else sorted(stored[1]) if stored else []
        mentioned = (
            await self._mentioned(installation, repository, pull, stored[0] if stored else None)
            if not numbers
            else []
        )
        numbers = numbers or mentioned
        # A merge-queue commit carries the PR's work: judge it by what was accepted at the PR's head.
        judged_at = (
            await self._queued_head(installation, repository, pull, stored) if merge_group else head_sha
        )
        tickets = [await self._linked(installation, repository, n, judged_at) for n in numbers]
        result = verdict(
            judged_at,
            tickets,
            unlinked_passes=loaded.config.checks.unlinked is UnlinkedConclusion.SUCCESS,
            author_only_runner=await self._only_runner(installation, repository, stored, loaded),
        )
        if mentioned:
            result = outsiders_pull(result, mentioned)
        base = stored[0].base_ref if stored else None
        problems = await self._proposed(installation, repository, pull, judged_at or head_sha, base)
        if problems:
            result = blocked_by_config(result, problems)
        bodies = [await self._linked_body(installation, repository, n) for n in numbers]
        link = next((link for link, _ in bodies if link), None)
        return Judged(result, tickets, bodies, link, problems)

    async def _mentioned(
        self, installation: int, repository: str, number: int, pull: PullRequest | None
    ) -> list[int]:
        """The tickets an outsider's fork PR names (its links only mention them, and move no
        rail): its merge would count for them, so its check never passes (`outsiders_pull`).
        So too for a PR railyard has no row for (its `opened` never arrived: a Re-run asks), whose
        links it cannot tell apart. Nothing for any other PR."""
        if self.ports is None or (pull is not None and pull.links_count):
            return []
        try:
            found = await self.ports.github.pull(installation, repository, number)
        except Missing:
            return []
        named, _ = capped(linked_issues(dig_str(found, "body"), repository))
        tickets = [await self._load(repository, n) for n in sorted(named)]
        return [ticket.key.number for ticket in tickets if ticket is not None and ticket.exists]

    async def _queued_head(
        self, installation: int, repository: str, pull: int, stored: tuple[PullRequest, set[int]] | None
    ) -> str | None:
        """The PR head a merge-queue commit carries: the PR's head as GitHub says it now (a PR
        pushed to while queued leaves the queue), not the one railyard stored, whose
        `synchronize` may not be processed yet; railyard's only without GitHub (None: the PR is
        gone, and no acceptance can be judged)."""
        if self.ports is None:
            return stored[0].head_sha if stored else None
        try:
            found = await self.ports.github.pull(installation, repository, pull)
        except Missing:
            return None
        return dig_str(found, "head", "sha")

    async def _linked(self, installation: int, repository: str, number: int, head_sha: str | None) -> Linked:
        """One linked ticket as the check judges it: an accepted one's acceptance judged again now
        (a lapse recorded once), and the head's tree when it is not the accepted commit."""
        key = TicketKey(repository, number)
        validity = await recheck(self.ports, installation, key) if self.ports is not None else None
        ticket = await self._load(repository, number)
        review = ticket.review if ticket is not None and ticket.work is WorkState.ACCEPTED else None
        head_tree = None
        if review is not None and review.tree and head_sha and review.commit != head_sha and self.ports:
            try:
                found = await self.ports.github.commit(installation, repository, head_sha)
            except Missing:  # GitHub does not know the head (yet): its content cannot be the accepted one
                found = None
            head_tree = dig_str(found, "commit", "tree", "sha")
        return Linked(number, ticket, validity, head_tree)

    async def _proposed(
        self, installation: int, repository: str, pull: int, head_sha: str, base_ref: str | None
    ) -> tuple[str, ...]:
        """The problems of the `.github/railyard.yml` the PR proposes at its head, if it changes it."""
        if self.proposed is None:
            return ()
        return await self.proposed.problems(installation, repository, pull, head_sha, base_ref)

    async def _linked_body(self, installation: int, repository: str, number: int) -> tuple[str, str | None]:
        view = await self._view(installation, repository, number)
        link = await off_loop(self._status_link, repository, number)
        # The check quotes the visible part only: one ticket's status-json line lives on its issue.
        return link or "", render_status_comment(view) if view else None

    async def _view(self, installation: int, repository: str, number: int) -> StatusView | None:
        key = TicketKey(repository, number)
        ticket, history, clocks = await read_shown_now(self.tickets.database, key)
        if ticket is None or not ticket.exists:
            return None
        loaded = await self._config(installation, repository)
        lacking = await off_loop(self._project_problems, repository, number, loaded)
        return StatusView(
            ticket,
            tuple(recorded.event for recorded in history),
            config_error=shown_error(loaded.error),  # no other repository's file quoted
            issue_closed=ticket.closed,
            clocks=clocks,
            project_problems=lacking,
            policy=loaded.config.to_rail_policy(),  # the rails' own: blocks named as they judged
            now=datetime.fromtimestamp(self._clock(), UTC),  # an expiry passed shows, recorded or not
        )

    async def _load(self, repository: str, number: int) -> Ticket | None:
        return await off_loop(self.tickets.load, TicketKey(repository, number))

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
        """Whether the PR's author holds the runner role and no other (only asked of unlinked PRs).

        Each push renders the check again, and anyone can push to their own fork's PR: it is
        asked runner first, a fork's author as an outsider (one organization-membership call when
        it is no member), and an author without the runner role is kept so per PR, author and
        configuration for `RUNNER_ONLY_SECONDS`: a role-less author costs one call in ten
        minutes, not one per team named on every push."""
        if stored is None or stored[0].author is None or stored[1] or self.github is None:
            return False
        pull, author = stored[0], stored[0].author
        where = pull.repository_id if pull.repository_id is not None else repository.casefold()
        key = (where, pull.number, author.casefold(), loaded.policy_version)
        now = self._clock()
        asked = self._not_runner.get(key)
        if asked is not None and now - asked < RUNNER_ONLY_SECONDS:
            return False
        resolver = RoleResolver(self.github, installation, repository)
        roles, outsider = loaded.config.roles, not pull.head_in_repository
        try:
            runner = await resolver.roles(author, roles, [Role.RUNNER], first_only=True, outsider=outsider)
            others = [role for role in Role if role is not Role.RUNNER]
            only = bool(runner) and not await resolver.roles(author, roles, others, first_only=True)
        except CannotVerify:
            return True  # never pass a PR on roles railyard could not check (nothing kept)
        if not runner:  # only an author without the runner role is kept (see RUNNER_ONLY_SECONDS)
            self._not_runner[key] = now
            self._not_runner.move_to_end(key)
            if len(self._not_runner) > RUNNER_ONLY_KEPT:
                self._not_runner.popitem(last=False)
        return only

    def _status_link(self, repository: str, number: int) -> str | None:
        """The status comment's address, once it has been written."""
        with self.database.read() as connection:
            result = effect_result(connection, status_key(repository, number))
        return (result or {}).get("html_url")

    def _project_problems(
        self, repository: str, number: int, loaded: LoadedConfig
    ) -> tuple[tuple[str, tuple[Problem, ...]], ...]:
        """What the configured projects lacked at the ticket's last project sync (a project
        no longer configured is not mentioned)."""
        if not loaded.config.projects:
            return ()
        with self.database.read() as connection:
            found = problems_in(effect_result(connection, project_key(repository, number)))
        names = (project_name(p.owner, p.number) for p in loaded.config.projects)
        return tuple((name, found[name]) for name in names if found.get(name))

    def _enqueue(self, effect: Effect) -> None:
        with self.database.write() as connection:
            enqueue(connection, [effect], time.time())

    def _open_at_head(self, repository: str, head_sha: str) -> list[int]:
        """The open PRs whose head is `head_sha`, lowest number first."""
        with self.database.read() as connection:
            found = pulls_where(connection, repository, head_sha=head_sha)
        return sorted(pull.number for pull, _ in found if pull.open)

    def _stored_pull(self, repository: str, number: int) -> tuple[PullRequest, set[int]] | None:
        with self.database.read() as connection:
            return stored_pull(connection, repository, number)


def _field_names(project: ProjectConfig) -> dict[ProjectRail, str]:
    fields = project.fields
    return {
        ProjectRail.WORK: fields.work,
        ProjectRail.REPOSITORY: fields.repository,
        ProjectRail.DEPLOYMENT: fields.deployment,
    }


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
