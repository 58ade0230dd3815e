"""Slash-commands in issue and pull-request comments.

A newly created comment is parsed; the ticket is found (the issue itself, or the single
ticket a pull request links); the actor's roles are resolved now, from the repository's
configuration and GitHub; labels, assignees and commits are read now; and the command goes
through the one door, `TicketService.execute`, whose outcome decides the answers that are
enqueued with it: a reaction, a reply that explains a refusal, an assignment, a mention.
Edited and deleted comments never run anything.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog

from app.bootstrap import Services
from app.github.client import GitHubClient, GitHubError
from app.github.config import LoadedConfig
from app.github.roles import CannotVerify, RoleResolver
from app.runtime.outbox import Effect, assign, comment, reaction
from app.runtime.watchdog import claimant_comment, record_sign_of_life, signs_from_events
from app.store.pulls import tickets_on_branch
from app.store.replies import Reply, enqueue_reply
from app.store.tickets import Outcome
from app.views.markdown import escape_block, escape_inline, mention
from app.views.render import headline
from app.views.surfaces import show, status_comment
from app.web.payloads import dig, dig_int, dig_str
from handlers.rails import report_delivered_branch, tell_held
from handlers.routing import Router, WebhookEvent
from policies.commands import Command, Context, Deliver, Publish
from policies.links import linked_issues
from policies.model import Actor, Ticket, TicketKey
from policies.parser import ParsedComment, parse_comment
from policies.refusals import Refusal, RefusalCode
from policies.states import WorkState
from policies.transitions import next_steps, roles_in_rows

router = Router()
log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class CommentFacts:
    """What the handler reads from an `issue_comment` payload."""

    installation_id: int
    repository: str
    number: int
    on_pull_request: bool
    comment_id: int
    body: str
    created_at: datetime
    author: str
    author_id: int  # the account; `author` is only the login it has now
    author_is_bot: bool
    via_app_id: int | None

    @classmethod
    def read(cls, event: WebhookEvent) -> CommentFacts | None:
        """The facts, or None when the payload lacks what a command needs."""
        p = event.payload
        repository = dig_str(p, "repository", "full_name")
        number, comment_id = dig_int(p, "issue", "number"), dig_int(p, "comment", "id")
        author, created = dig_str(p, "comment", "user", "login"), dig_str(p, "comment", "created_at")
        author_id = dig_int(p, "comment", "user", "id")
        if None in (event.installation_id, repository, number, comment_id, author, author_id, created):
            return None
        return cls(
            installation_id=int(event.installation_id),  # type: ignore[arg-type]
            repository=str(repository),
            number=int(number),  # type: ignore[arg-type]
            on_pull_request=dig(p, "issue", "pull_request") is not None,
            comment_id=int(comment_id),  # type: ignore[arg-type]
            body=dig_str(p, "comment", "body") or "",
            created_at=datetime.fromisoformat(str(created).replace("Z", "+00:00")),
            author=str(author),
            author_id=int(author_id),  # type: ignore[arg-type]
            author_is_bot=dig_str(p, "comment", "user", "type") == "Bot",
            via_app_id=dig_int(p, "comment", "performed_via_github_app", "id"),
        )


def help_text() -> str:
    """The command list, from the transition table."""
    lines = ["**railyard commands**", ""]
    seen = set()
    for state in (None, *WorkState):
        for label, allowed in next_steps(state):
            if label not in seen:
                seen.add(label)
                lines.append(f"- `{label}` ({', '.join(allowed)})")
    lines += ["- `/status` (anyone): where the ticket stands and who can act next", "- `/help` (anyone)"]
    return "\n".join(lines)


NOT_A_TICKET = (
    "This issue is not a ticket. A requester or task owner can make it one with `/draft` or `/publish`."
)


def status_text(ticket: Ticket | None) -> str:
    """A short answer to `/status`: the three rails and who can act next."""
    if ticket is None or not ticket.exists:
        return NOT_A_TICKET
    lines = [headline(ticket), "", "The status comment shows the whole record.", "", "Next:"]
    lines += [f"- `{label}`: {', '.join(allowed)}" for label, allowed in next_steps(ticket.work)]
    return "\n".join(lines)


@router.register("issue_comment", "created")
async def on_comment_created(event: WebhookEvent, services: Services) -> None:
    """Run the command in a new comment, if there is one."""
    facts = CommentFacts.read(event)
    if facts is None or services.github is None or services.configs is None:
        return
    if services.app_id is not None and facts.via_app_id == services.app_id:
        return  # the app never acts on its own comments
    await asyncio.to_thread(note_claimant_comment, facts, services)  # a database read: off the loop
    parsed = parse_comment(facts.body)
    if parsed.command is None and parsed.informational is None and not parsed.near_miss and not parsed.error:
        return
    with structlog.contextvars.bound_contextvars(
        repository=facts.repository, issue=facts.number, operation_id=str(facts.comment_id)
    ):
        await CommandRun(facts, parsed, services, services.github).run()


def note_claimant_comment(facts: CommentFacts, services: Services) -> None:
    """Any comment by the ticket's claimant on its issue, command or not, is a sign of life."""
    if facts.on_pull_request:
        return
    ticket = services.tickets.load(TicketKey(facts.repository, facts.number))
    heard = claimant_comment(ticket, facts.author, facts.author_id, facts.created_at, facts.comment_id)
    if heard is not None:
        record_sign_of_life(services.database, heard)


class CommandRun:
    """One comment's command, from payload to outcome and answers."""

    def __init__(
        self, facts: CommentFacts, parsed: ParsedComment, services: Services, github: GitHubClient
    ) -> None:
        self.facts, self.parsed, self.services, self.github = facts, parsed, services, github

    async def run(self) -> None:
        """Find the ticket, resolve roles and facts, execute, answer."""
        assert self.services.configs is not None
        loaded = await self.services.configs.load(
            self.facts.installation_id, self.facts.repository, fresh=True
        )
        if self.facts.author_is_bot and not _names_login(loaded, self.facts.author):
            return  # other bots act only when a role names them by login
        if self.parsed.error or self.parsed.near_miss:
            self._reply(self._hint(), "hint")
            return
        number = await self._ticket_number()
        if number is None:
            return
        key = TicketKey(self.facts.repository, number)
        if self.parsed.informational is not None:
            await self._informational(key)
            return
        command = self.parsed.command
        assert command is not None
        try:
            resolver = RoleResolver(self.github, self.facts.installation_id, self.facts.repository)
            roles = await resolver.roles(self.facts.author, loaded.config, among=roles_in_rows(command))
            issue = await self._issue(key.number)
            completed = await self._complete(command, issue, loaded)
        except CannotVerify as error:
            self._reply(f"{self._quote()}\n\nrailyard cannot run this yet: {escape_inline(str(error))}. "
                        "It will try again.", "cannot-verify")  # fmt: skip
            raise
        if isinstance(completed, Refusal):
            self._answer_refusal(completed)
            return
        high_risk = bool(_label_names(issue) & set(loaded.config.high_risk.labels))
        context = self._context(Actor(self.facts.author, roles, self.facts.author_id), loaded, high_risk)
        outcome = self.services.tickets.execute(
            key, completed, context, effects=self._answers, installation_id=self.facts.installation_id
        )
        if outcome.applied:  # an attempt opened or a delivery: the watchdog's start or sign of life
            limit, source = loaded.config.claims.max_silence_minutes, str(self.facts.comment_id)
            for heard in signs_from_events(
                key, outcome.events, self.facts.created_at, source, limit, loaded.policy_version
            ):
                record_sign_of_life(self.services.database, heard)
        if outcome.applied and isinstance(completed, Publish):  # news of the issue from before
            await tell_held(
                self.services, self.facts.repository, loaded, key.number, self.facts.installation_id
            )
        if outcome.applied and isinstance(completed, Deliver) and completed.branch:
            report_delivered_branch(
                self.services, self.facts.repository, loaded, key.number, completed.branch, completed.commit,
                operation=f"delivered:{self.facts.comment_id}",
            )  # fmt: skip
        log.info(
            "command",
            command=self.parsed.word,
            applied=outcome.applied,
            replayed=outcome.replayed,
            refusal=outcome.refusal.code.value if outcome.refusal else None,
        )

    # -- finding the ticket ------------------------------------------------------------

    async def _ticket_number(self) -> int | None:
        """The issue itself; on a PR, the ticket it links (or the one named with #N)."""
        if not self.facts.on_pull_request:
            return self.facts.number
        pull = await self.github.call(
            "get_pull", self.facts.installation_id, repository=self.facts.repository, number=self.facts.number
        )
        from_body = linked_issues(dig_str(pull, "body"), self.facts.repository)
        head = dig_str(pull, "head", "ref")
        head_repository = dig_str(pull, "head", "repo", "full_name")  # a fork's branch links nothing
        delivered = (
            tickets_on_branch(
                self.services.database, self.facts.repository, head, head_repository=head_repository
            )
            if head
            else set()
        )
        linked = sorted(from_body | delivered)
        target = self.parsed.target
        if target is not None and target in linked:
            return target
        if target is None and len(linked) == 1:
            return linked[0]
        if target is not None:
            problem = f"this pull request does not link #{target}; it links {_numbers(linked)}."
        elif linked:
            problem = (
                f"this pull request links several tickets ({_numbers(linked)}); "
                f"name one, e.g. `/accept #{linked[0]}`."
            )
        else:
            problem = (
                "this pull request links no ticket; link one with `Fixes #N` or `Refs #N` in its description."
            )
        self._reply(f"{self._quote()}\n\nRefused: {problem}", "pr-target")
        return None

    # -- facts read at execution time --------------------------------------------------

    async def _complete(self, command: Command, issue: Any, loaded: LoadedConfig) -> Command | Refusal:
        """Fill in what only GitHub knows now: the description and owner, the delivered commit."""
        if isinstance(command, Publish):
            labels = _label_names(issue)
            assignees = [a for a in dig(issue, "assignees") or [] if dig_str(a, "login") and dig_int(a, "id")]
            no_code = command.no_code or loaded.config.tickets.no_code_label in labels
            return replace(
                command,
                description=dig_str(issue, "body") or "",
                first_assignee=dig_str(assignees[0], "login") if assignees else None,
                first_assignee_id=dig_int(assignees[0], "id") if assignees else None,
                no_code=no_code,
            )
        if isinstance(command, Deliver):
            return await self._resolve_delivery(command)
        return command

    async def _issue(self, number: int) -> Any:
        return await self.github.call(
            "get_issue", self.facts.installation_id, repository=self.facts.repository, number=number
        )

    async def _resolve_delivery(self, command: Deliver) -> Deliver | Refusal:
        """The commit: the given sha, else the branch head, else the linked PR's head."""
        repository, installation = self.facts.repository, self.facts.installation_id
        pull_number = command.pull_request or (self.facts.number if self.facts.on_pull_request else None)
        try:
            if command.commit:
                found = await self.github.call(
                    "get_commit", installation, repository=repository, ref=command.commit
                )
                return replace(command, commit=dig_str(found, "sha"), pull_request=pull_number)
            if command.branch:
                found = await self.github.call(
                    "get_branch", installation, repository=repository, branch=command.branch
                )
                return replace(command, commit=dig_str(found, "commit", "sha"), pull_request=pull_number)
            if pull_number is not None:
                found = await self.github.call(
                    "get_pull", installation, repository=repository, number=pull_number
                )
                branch = dig_str(found, "head", "ref")
                return replace(
                    command, commit=dig_str(found, "head", "sha"), branch=branch, pull_request=pull_number
                )
        except GitHubError as error:
            if error.status not in (404, 422):  # 422: "No commit found for SHA"
                raise
            what = (
                f"commit {command.commit}"
                if command.commit
                else f"branch {command.branch}"
                if command.branch
                else f"pull request #{pull_number}"
            )
            return Refusal(
                RefusalCode.MISSING_ARTIFACT,
                f"/deliver: {what} was not found in {repository}.",
                "Push it first, or name the branch, commit or pull request that holds the work.",
            )
        return command

    def _context(self, actor: Actor, loaded: LoadedConfig, high_risk: bool) -> Context:
        now = datetime.fromtimestamp(self.services.clock(), UTC)
        config = loaded.config
        recent = self.services.tickets.commands_since(
            self.facts.repository, self.facts.author_id, now - timedelta(hours=1)
        )
        return Context(
            actor=actor,
            operation_id=str(self.facts.comment_id),
            at=now,
            comment_id=self.facts.comment_id,
            comment_at=self.facts.created_at,
            policy_version=loaded.policy_version,
            high_risk=high_risk,
            self_verification=config.self_verification,
            environments=config.deployments.environments,
            commands_last_hour=recent,
            commands_per_hour=config.limits.commands_per_hour,
            config_error=loaded.error,
            on_pull_request=self.facts.on_pull_request,
        )

    # -- answers ------------------------------------------------------------------------

    def _answers(self, outcome: Outcome) -> list[Effect | Reply]:
        """The GitHub writes the outcome calls for, enqueued with it."""
        f = self.facts
        effects: list[Effect | Reply] = []
        if outcome.refusal is not None:
            return [self._refusal_effect(outcome.refusal)]
        effects.append(reaction(f.installation_id, f.repository, f.comment_id, "+1"))
        last = outcome.events[-1] if outcome.events else None
        if last is not None and last.type.value == "claimed":
            effects.append(
                assign(
                    f.installation_id,
                    f.repository,
                    outcome.ticket.number,
                    [last.actor],
                    f"claim:{f.comment_id}",
                )
            )
        if last is not None and last.type.value == "sent_back":
            runner = last.data.get("runner")
            feedback = escape_block(str(last.data.get("feedback", "")), limit=4000)
            who = _mention(runner) if runner else "the runner"
            attempt = last.data.get("attempt")
            body = f"{who}: sent back for attempt {attempt} by {_mention(f.author)}.\n\n{feedback}"
            effects.append(
                comment(
                    f.installation_id, f.repository, outcome.ticket.number, body, f"sent-back:{f.comment_id}"
                )
            )
        if self.parsed.ignored:
            words = ", ".join(f"`/{w}`" for w in self.parsed.ignored)
            note = f"Ran `/{self.parsed.word}`; ignored {words}: one state-changing command per comment."
            effects.append(self._reply_to_author(note, "ignored"))
        return effects

    def _refusal_effect(self, refusal: Refusal) -> Reply:
        body = f"{self._quote()}\n\nRefused: {escape_block(refusal.reason, limit=2000)}"
        if refusal.hint:
            body += f"\n\n{escape_inline(refusal.hint, limit=500)}"
        return self._reply_to_author(body, "refusal")

    def _answer_refusal(self, refusal: Refusal) -> None:
        reply = self._refusal_effect(refusal)
        with self.services.database.write() as connection:
            enqueue_reply(connection, reply, self.services.clock())

    def _reply(self, body: str, kind: str) -> None:
        """Answer the comment, within the author's reply limit (see `app.store.replies`)."""
        reply = self._reply_to_author(body, kind)
        with self.services.database.write() as connection:
            enqueue_reply(connection, reply, self.services.clock())

    def _reply_to_author(self, body: str, kind: str) -> Reply:
        f = self.facts
        return Reply(f.installation_id, f.repository, f.number, f.comment_id, f.author_id, kind, body)

    async def _informational(self, key: TicketKey) -> None:
        if self.parsed.informational == "help":
            self._reply(help_text(), "help")
        else:
            ticket = self.services.tickets.load(key)
            if ticket is not None and ticket.exists:
                effect = status_comment(self.facts.installation_id, self.facts.repository, key.number)
                show(self.services, effect)
            self._reply(status_text(ticket), "status")

    def _quote(self) -> str:
        line = self.parsed.line or f"/{self.parsed.word or ''}"
        return f"{_mention(self.facts.author)} > {escape_inline(line, limit=200)}"

    def _hint(self) -> str:
        if self.parsed.error:
            return f"{self._quote()}\n\n{escape_inline(self.parsed.error, limit=500)}"
        typed, suggestion = self.parsed.near_miss or ("", "")
        typed = escape_inline(typed, 50)
        return f"{self._quote()}\n\n`/{typed}` is not a railyard command. Did you mean `/{suggestion}`?"


def _names_login(loaded: LoadedConfig, login: str) -> bool:
    return any(
        entry.login is not None and entry.login.casefold() == login.casefold()
        for entries in loaded.config.roles.values()
        for entry in entries
    )


def _label_names(issue: Any) -> set[str]:
    return {name for name in (dig_str(label, "name") for label in dig(issue, "labels") or []) if name}


def _numbers(numbers: list[int]) -> str:
    return ", ".join(f"#{n}" for n in numbers) or "none"


def _mention(login: str) -> str:
    try:
        return mention(login)
    except ValueError:
        return escape_inline(login, limit=60)
