"""Slash-commands in issue and pull-request comments.

A newly created comment is parsed and its command run (`handlers.commands`); a comment is
answered on GitHub: the status comment shows what it did (and on a pull request a reaction
says so), a reply explains a refusal; a claim assigns, a send-back mentions. Edited and
deleted comments never run anything.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime

import structlog

from handlers.answers import (
    Answer,
    Help,
    Ignored,
    Message,
    Reaction,
    Refused,
    Reply,
    StatusAnswer,
    StatusComment,
)
from handlers.commands import CommandFacts, CommandRun
from handlers.outsiders import Admission, admit, settle
from handlers.payloads import dig, dig_int, dig_str, dig_time
from handlers.ports import Outcome, Rules, Services
from handlers.routing import Router, WebhookEvent
from handlers.signs import claimant_comment, only_informational
from policies.budgets import Budget, Repository, command_budget, repository_scope
from policies.model import TicketKey
from policies.parser import ParsedComment, parse_comment
from policies.refusals import RefusalCode

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
    received_at: datetime | None = None  # railyard's clock: the comment existed by then
    repository_id: int | None = None  # GitHub's `repository.id` (its budgets count under it)

    @classmethod
    def read(cls, event: WebhookEvent) -> CommentFacts | None:
        """The facts, or None when the payload lacks what a command needs."""
        p = event.payload
        repository = dig_str(p, "repository", "full_name")
        number, comment_id = dig_int(p, "issue", "number"), dig_int(p, "comment", "id")
        author, created = dig_str(p, "comment", "user", "login"), dig_time(p, "comment", "created_at")
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
            created_at=created,  # type: ignore[arg-type]
            author=str(author),
            author_id=int(author_id),  # type: ignore[arg-type]
            author_is_bot=dig_str(p, "comment", "user", "type") == "Bot",
            via_app_id=dig_int(p, "comment", "performed_via_github_app", "id"),
            received_at=datetime.fromtimestamp(event.received_at, UTC) if event.received_at else None,
            repository_id=dig_int(p, "repository", "id"),
        )


@router.register("issue_comment", "created")
async def on_comment_created(event: WebhookEvent, services: Services) -> None:
    """Note the claimant's sign of life; run the command in the comment, if there is one."""
    facts = CommentFacts.read(event)
    if facts is None or facts.via_app_id == services.app_id:
        return  # the app never acts on its own comments
    parsed = parse_comment(facts.body)
    await note_claimant_comment(facts, services, only_informational(facts.body, parsed))
    if not answered(parsed):
        return
    with structlog.contextvars.bound_contextvars(
        repository=facts.repository, issue=facts.number, operation_id=str(facts.comment_id)
    ):
        await CommentCommand(facts, parsed, services).run()


def answered(parsed: ParsedComment) -> bool:
    """Whether railyard answers the comment: a command, `/status` or `/help`, or something it
    takes for a mistyped one (anything else is conversation)."""
    return bool(
        parsed.command is not None or parsed.informational is not None or parsed.near_miss or parsed.error
    )


async def note_claimant_comment(facts: CommentFacts, services: Services, informational_only: bool) -> None:
    """Any comment by the ticket's claimant on its issue, command or not, is a sign of life, except
    one that only asks for `/status` or `/help` (kept in a unit of its own: it counts even when
    the command waits for a retry)."""
    if facts.on_pull_request:
        return
    async with services.store.read() as reads:
        ticket = await reads.ticket(TicketKey(facts.repository, facts.number))
    heard = claimant_comment(
        ticket, facts.author, facts.author_id, facts.created_at, facts.comment_id, informational_only
    )
    if heard is not None:
        async with services.store.unit() as uow:
            await uow.record_sign_of_life(heard)
            await uow.commit()


class CommentCommand(CommandRun):
    """A comment's command, answered on GitHub: a reaction, or a reply to its author."""

    def __init__(self, comment: CommentFacts, parsed: ParsedComment, services: Services) -> None:
        facts = CommandFacts(
            installation_id=comment.installation_id,
            repository=comment.repository,
            number=comment.number,
            on_pull_request=comment.on_pull_request,
            operation_id=str(comment.comment_id),
            at=comment.created_at,
            author=comment.author,
            author_id=comment.author_id,
            author_is_bot=comment.author_is_bot,
            comment_id=comment.comment_id,
            received_at=comment.received_at,
            repository_id=comment.repository_id,
        )
        super().__init__(facts, parsed, services)
        self.comment = comment
        self._admission: tuple[Admission, int] | None = None  # and the limit it was taken under
        self._spent: Budget | None = None  # the author's command budget, once one was spent

    async def run(self) -> Outcome | None:
        """The command's run; the author's reserved role-less request settled after it, and the
        command given back to its budget when it will run again (it raised before the door
        committed: GitHub could not answer, or failed, and the delivery is retried) or ran before
        (a redelivered comment replays its outcome). Once the door committed it ran: an error
        after that keeps the unit, and the retry replays and gives its own back."""
        try:
            outcome = await super().run()
        except BaseException:
            if not self.door_committed:
                await self._give_command_back()
            raise
        finally:
            if self._admission is not None:
                (admission, limit), c = self._admission, self.comment
                roleless = None if self.roles is None else not self.roles
                await settle(
                    self.services.budgets, c.author_id, self._budget_scope, limit, admission, roleless,
                    asked=self.read_pull,
                )  # fmt: skip
        if outcome is not None and outcome.replayed:
            await self._give_command_back()
        return outcome

    @property
    def _budget_scope(self) -> Repository:
        """Where the author's budgets count: GitHub's repository id, which a rename or a transfer
        keeps (`policies.budgets.Repository`); the name only for a payload without one."""
        return repository_scope(self.comment.repository_id, self.comment.repository)

    async def within_command_budget(self, rules: Rules) -> bool:
        """One of the author's `limits.commands_per_hour` here, spent before the command runs, in
        one conditional upsert (`handlers.ports.Budgets`): comments on several tickets at once
        cannot each find the last one free. The API's commands spend the same budget; past it
        the door refuses the command as over budget (the reply says so, and it is counted)."""
        budget = command_budget(self._budget_scope, rules.commands_per_hour)
        taken = await self.services.budgets.spend(self.comment.author_id, budget) is None
        self._spent = budget if taken else None
        return taken

    async def _give_command_back(self) -> None:
        if self._spent is not None:
            await self.services.budgets.refund(self.comment.author_id, self._spent)
            self._spent = None

    async def admitted(self, rules: Rules) -> bool:
        """Within the author's role-less requests (`handlers.outsiders`), as through the API: past
        them, silence, nothing recorded, GitHub not asked. One found role-less lately is asked
        with the organization-membership shortcut."""
        c, limit = self.comment, rules.outsider_requests_per_hour
        admission = await admit(self.services.budgets, c.author_id, self._budget_scope, limit)
        if admission.over is not None:
            log.info("outsider over budget", budget=admission.over.scope, author_id=c.author_id)
            return False
        self._admission = (admission, limit)
        self.facts = replace(self.facts, outsider=admission.outsider)
        return True

    def answers(self, outcome: Outcome) -> list[Answer]:
        """A refusal's reply; else the assignment or notice and any ignored lines, and on a pull
        request a reaction. On the issue itself the status comment, edited within seconds, is the
        acknowledgement: a `+1` there would be one more content write per command (issue 17)."""
        c = self.comment
        if outcome.refusal is not None:
            stale = outcome.refusal.code is RefusalCode.STALE_REVISION
            retry = f"/{self.parsed.word} rev={outcome.revision}" if stale else None
            return [self._reply_to_author(Refused(outcome.refusal, retry, outcome.revision))]
        answers: list[Answer] = []
        if c.on_pull_request:  # the status comment is on the issue: here only a reaction says "done"
            answers.append(Reaction(c.installation_id, c.repository, c.comment_id, "+1"))
        answers += self.common_answers(outcome)
        if self.parsed.ignored:
            answers.append(self._reply_to_author(Ignored(self.parsed.word or "", tuple(self.parsed.ignored))))
        return answers

    async def say(self, message: Message) -> None:
        """Answer the comment, within the author's reply limit (a unit of its own)."""
        async with self.services.store.unit() as uow:
            await uow.send(self._reply_to_author(message))
            await uow.commit()

    def _reply_to_author(self, message: Message) -> Reply:
        c = self.comment
        line = self.parsed.line or f"/{self.parsed.word or ''}"
        return Reply(
            c.installation_id, c.repository, c.number, c.comment_id, c.author, c.author_id, line, message
        )

    async def informational(self, key: TicketKey, rules: Rules) -> None:
        """`/help`: the command list; `/status`: the status comment again, and a short answer that
        names what blocks the repository rail under the repository's `checks.required`, as the
        status comment does (never a check the repository does not require)."""
        if self.parsed.informational == "help":
            await self.say(Help())
            return
        async with self.services.store.read() as reads:
            ticket = await reads.ticket(key)
        async with self.services.store.unit() as uow:
            if ticket is not None and ticket.exists:
                await uow.send(StatusComment(self.comment.installation_id, key.repository, key.number))
            await uow.send(self._reply_to_author(StatusAnswer(ticket, rules.rail_policy)))
            await uow.commit()
