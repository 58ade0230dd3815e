"""Slash-commands in issue and pull-request comments.

A newly created comment is parsed; the ticket is found (the issue itself, or the single
ticket a pull request links); the actor's roles are resolved now, from the repository's
configuration and GitHub; labels, assignees and commits are read now; and the command goes
through the one door in one unit of work, with the answers its outcome calls for: a
reaction, a reply that explains a refusal, an assignment, a mention. Edited and deleted
comments never run anything.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog

from handlers.answers import (
    Answer,
    ArtifactNotFound,
    Assign,
    CannotRunYet,
    Help,
    Ignored,
    Malformed,
    Message,
    NearMiss,
    PullTarget,
    Reaction,
    Refused,
    Reply,
    SentBackNotice,
    StatusAnswer,
    StatusComment,
)
from handlers.errors import CannotVerify, Missing
from handlers.observe import Source, delivered_branch, recheck_merged, tell_held
from handlers.payloads import dig, dig_int, dig_str
from handlers.ports import Outcome, Rules, Services
from handlers.routing import Router, WebhookEvent
from handlers.signs import claimant_comment, signs_from_events
from policies.commands import Command, Context, Deliver, Publish
from policies.links import linked_issues
from policies.model import Actor, TicketKey
from policies.parser import ParsedComment, parse_comment
from policies.refusals import RefusalCode
from policies.transitions import roles_in_rows

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


@router.register("issue_comment", "created")
async def on_comment_created(event: WebhookEvent, services: Services) -> None:
    """Note the claimant's sign of life; run the command in the comment, if there is one."""
    facts = CommentFacts.read(event)
    if facts is None or facts.via_app_id == services.app_id:
        return  # the app never acts on its own comments
    await note_claimant_comment(facts, services)
    parsed = parse_comment(facts.body)
    if parsed.command is None and parsed.informational is None and not parsed.near_miss and not parsed.error:
        return
    with structlog.contextvars.bound_contextvars(
        repository=facts.repository, issue=facts.number, operation_id=str(facts.comment_id)
    ):
        await CommandRun(facts, parsed, services).run()


async def note_claimant_comment(facts: CommentFacts, services: Services) -> None:
    """Any comment by the ticket's claimant on its issue, command or not, is a sign of life
    (kept in a unit of its own: it counts even when the command waits for a retry)."""
    if facts.on_pull_request:
        return
    async with services.store.read() as reads:
        ticket = await reads.ticket(TicketKey(facts.repository, facts.number))
    heard = claimant_comment(ticket, facts.author, facts.author_id, facts.created_at, facts.comment_id)
    if heard is not None:
        async with services.store.unit() as uow:
            await uow.record_sign_of_life(heard)
            await uow.commit()


class CommandRun:
    """One comment's command, from payload to outcome and answers."""

    def __init__(self, facts: CommentFacts, parsed: ParsedComment, services: Services) -> None:
        self.facts, self.parsed, self.services = facts, parsed, services

    async def run(self) -> None:
        """Find the ticket, resolve roles and facts, execute, answer."""
        f, services = self.facts, self.services
        rules = await services.configs.load(f.installation_id, f.repository, fresh=True)
        if f.author_is_bot and not rules.names_login(f.author):
            return  # other bots act only when a role names them by login
        if self.parsed.error:
            await self._reply(Malformed(self.parsed.error))
            return
        if self.parsed.near_miss:
            await self._reply(NearMiss(*self.parsed.near_miss))
            return
        number = await self._ticket_number()
        if number is None:
            return
        key = TicketKey(f.repository, number)
        if self.parsed.informational is not None:
            await self._informational(key)
            return
        command = self.parsed.command
        assert command is not None
        try:
            roles = await services.roles.roles(
                f.installation_id, f.repository, f.author, rules, roles_in_rows(command)
            )
            issue = await services.github.issue(f.installation_id, f.repository, number)
            completed = await self._complete(command, issue, rules)
        except CannotVerify as error:
            await self._reply(CannotRunYet(str(error)))
            raise
        if isinstance(completed, ArtifactNotFound):
            await self._reply(completed)
            return
        high_risk = bool(_label_names(issue) & set(rules.high_risk_labels))
        context = await self._context(Actor(f.author, roles, f.author_id), rules, high_risk)
        async with services.store.unit() as uow:
            outcome = await uow.execute(
                key,
                completed,
                context,
                expected_revision=self.parsed.expected_revision,
                installation_id=f.installation_id,
            )
            if outcome.answerable:
                await uow.send(*self._answers(outcome))
            merged: list[int] = []
            if outcome.applied:  # an attempt opened or a delivery: the watchdog's start or sign of life
                limit, source = rules.max_silence_minutes, str(f.comment_id)
                for heard in signs_from_events(
                    key, outcome.events, f.created_at, source, limit, rules.policy_version
                ):
                    await uow.record_sign_of_life(heard)
            if outcome.applied and isinstance(completed, Publish):  # news of the issue from before
                merged = await tell_held(uow, services, f.repository, rules, number, f.installation_id)
            if outcome.applied and isinstance(completed, Deliver) and completed.branch:
                operation = f"delivered:{f.comment_id}"
                await delivered_branch(
                    uow, services, f.repository, rules, number, completed.branch, completed.commit, operation
                )
            await uow.commit()
        await recheck_merged(
            services, f.repository, rules, merged, Source("railyard", "held", f.installation_id)
        )
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
        f = self.facts
        if not f.on_pull_request:
            return f.number
        pull = await self.services.github.pull(f.installation_id, f.repository, f.number)
        from_body = linked_issues(dig_str(pull, "body"), f.repository)
        head = dig_str(pull, "head", "ref")
        head_repository = dig_str(pull, "head", "repo", "full_name")  # a fork's branch links nothing
        delivered: set[int] = set()
        if head:
            async with self.services.store.read() as reads:
                delivered = await reads.tickets_on_branch(f.repository, head, head_repository=head_repository)
        linked = sorted(from_body | delivered)
        target = self.parsed.target
        if target is not None and target in linked:
            return target
        if target is None and len(linked) == 1:
            return linked[0]
        await self._reply(PullTarget(target, tuple(linked)))
        return None

    # -- facts read at execution time --------------------------------------------------

    async def _complete(self, command: Command, issue: Any, rules: Rules) -> Command | ArtifactNotFound:
        """Fill in what only GitHub knows now: the description and owner, the delivered commit."""
        if isinstance(command, Publish):
            labels = _label_names(issue)
            assignees = [a for a in dig(issue, "assignees") or [] if dig_str(a, "login") and dig_int(a, "id")]
            return replace(
                command,
                description=dig_str(issue, "body") or "",
                first_assignee=dig_str(assignees[0], "login") if assignees else None,
                first_assignee_id=dig_int(assignees[0], "id") if assignees else None,
                no_code=command.no_code or rules.no_code_label in labels,
            )
        if isinstance(command, Deliver):
            return await self._resolve_delivery(command)
        return command

    async def _resolve_delivery(self, command: Deliver) -> Deliver | ArtifactNotFound:
        """The commit: the given sha, else the branch head, else the linked PR's head."""
        f, github = self.facts, self.services.github
        pull_number = command.pull_request or (f.number if f.on_pull_request else None)
        try:
            if command.commit:
                found = await github.commit(f.installation_id, f.repository, command.commit)
                return replace(command, commit=dig_str(found, "sha"), pull_request=pull_number)
            if command.branch:
                found = await github.branch(f.installation_id, f.repository, command.branch)
                return replace(command, commit=dig_str(found, "commit", "sha"), pull_request=pull_number)
            if pull_number is not None:
                found = await github.pull(f.installation_id, f.repository, pull_number)
                branch = dig_str(found, "head", "ref")
                return replace(
                    command, commit=dig_str(found, "head", "sha"), branch=branch, pull_request=pull_number
                )
        except Missing:
            if command.commit:
                return ArtifactNotFound("commit", command.commit, f.repository)
            if command.branch:
                return ArtifactNotFound("branch", command.branch, f.repository)
            return ArtifactNotFound("pull request", str(pull_number), f.repository)
        return command

    async def _context(self, actor: Actor, rules: Rules, high_risk: bool) -> Context:
        f = self.facts
        now = datetime.fromtimestamp(self.services.clock(), UTC)
        async with self.services.store.read() as reads:
            recent = await reads.commands_since(f.repository, f.author_id, now - timedelta(hours=1))
        return Context(
            actor=actor,
            operation_id=str(f.comment_id),
            at=now,
            comment_id=f.comment_id,
            comment_at=f.created_at,
            policy_version=rules.policy_version,
            high_risk=high_risk,
            self_verification=rules.self_verification,
            environments=rules.environments,
            commands_last_hour=recent,
            commands_per_hour=rules.commands_per_hour,
            config_error=rules.error,
            on_pull_request=f.on_pull_request,
        )

    # -- answers ------------------------------------------------------------------------

    def _answers(self, outcome: Outcome) -> list[Answer]:
        """The GitHub writes the outcome calls for, enqueued with it."""
        f = self.facts
        if outcome.refusal is not None:
            stale = outcome.refusal.code is RefusalCode.STALE_REVISION
            retry = f"/{self.parsed.word} rev={outcome.revision}" if stale else None
            return [self._reply_to_author(Refused(outcome.refusal, retry, outcome.revision))]
        answers: list[Answer] = [Reaction(f.installation_id, f.repository, f.comment_id, "+1")]
        last = outcome.events[-1] if outcome.events else None
        number = outcome.ticket.number
        if last is not None and last.type.value == "claimed":
            answers.append(
                Assign(f.installation_id, f.repository, number, (last.actor,), f"claim:{f.comment_id}")
            )
        if last is not None and last.type.value == "sent_back":
            runner = last.data.get("runner")
            answers.append(
                SentBackNotice(
                    f.installation_id,
                    f.repository,
                    number,
                    str(runner) if runner else None,
                    last.data.get("attempt"),
                    f.author,
                    str(last.data.get("feedback", "")),
                    f"sent-back:{f.comment_id}",
                )
            )
        if self.parsed.ignored:
            answers.append(self._reply_to_author(Ignored(self.parsed.word or "", tuple(self.parsed.ignored))))
        return answers

    async def _reply(self, message: Message) -> None:
        """Answer the comment, within the author's reply limit (a unit of its own)."""
        async with self.services.store.unit() as uow:
            await uow.send(self._reply_to_author(message))
            await uow.commit()

    def _reply_to_author(self, message: Message) -> Reply:
        f = self.facts
        line = self.parsed.line or f"/{self.parsed.word or ''}"
        return Reply(
            f.installation_id, f.repository, f.number, f.comment_id, f.author, f.author_id, line, message
        )

    async def _informational(self, key: TicketKey) -> None:
        if self.parsed.informational == "help":
            await self._reply(Help())
            return
        async with self.services.store.read() as reads:
            ticket = await reads.ticket(key)
        async with self.services.store.unit() as uow:
            if ticket is not None and ticket.exists:
                await uow.send(StatusComment(self.facts.installation_id, self.facts.repository, key.number))
            await uow.send(self._reply_to_author(StatusAnswer(ticket)))
            await uow.commit()


def _label_names(issue: Any) -> set[str]:
    return {name for name in (dig_str(label, "name") for label in dig(issue, "labels") or []) if name}
