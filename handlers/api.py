"""Commands through the HTTP API (`POST /api/v1/.../commands`): the run a comment gets, answered
in the request instead of on GitHub.

The operation id is the request's Idempotency-Key scoped to the account, so the one door
applies it at most once. The JSON answer is worded by the caller (`Worded`, from `app/web`) and
kept in the unit that made the change: a request replayed with the same key gets exactly the
stored answer, and a crash can never leave a change without its answer. A command that never
reaches the door (it does not parse, names a commit the repository lacks) records nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from handlers.answers import Answer, ArtifactNotFound, Message
from handlers.commands import CommandFacts, CommandRun
from handlers.payloads import dig
from handlers.ports import KeptAnswer, Outcome, Rules, Services, UnitOfWork
from policies.commands import Command
from policies.door import API_OPERATION
from policies.model import Ticket
from policies.parser import ParsedComment
from policies.rails import RailPolicy
from policies.refusals import Refusal, RefusalCode
from policies.states import WorkState
from policies.watchdog import Clocks

Worded = Callable[[Outcome, Ticket | None, datetime, Clocks, RailPolicy], tuple[int, Mapping[str, Any]]]
"""The HTTP status and JSON body that answer an outcome (given the ticket as it is after it,
the time of the answer, when an acceptance is judged valid or expired, its clocks, and the
repository's rail policy the command ran under, which `blocked_by` is judged under)."""

BOT_NOT_NAMED = Refusal(
    RefusalCode.NOT_ALLOWED,
    "This account is a bot, and no role in .github/railyard.yml names it by login.",
    "Name the bot's login in the role it needs (for example runner).",
)


@dataclass(frozen=True)
class ApiCommand:
    """One API request to run a command: where, as which account, under which key."""

    installation_id: int
    repository: str
    number: int
    account_id: int
    login: str  # the account's login now, as GitHub answered for the token
    is_bot: bool
    key: str  # the Idempotency-Key
    digest: str  # the request it came with (route and body), to tell a reused key
    outsider: bool = False  # the account was lately found holding no role in the repository
    repository_id: int | None = None  # GitHub's id of the repository the name holds now

    @property
    def operation_id(self) -> str:
        """The key, scoped to the account: two accounts' keys never meet."""
        return f"{API_OPERATION}{self.account_id}:{self.key}"

    def facts(self, at: datetime) -> CommandFacts:
        """The command as the shared run sees it: written now, by this account, via the API."""
        return CommandFacts(
            installation_id=self.installation_id,
            repository=self.repository,
            number=self.number,
            on_pull_request=False,
            operation_id=self.operation_id,
            at=at,
            author=self.login,
            author_id=self.account_id,
            author_is_bot=self.is_bot,
            via="api",
            outsider=self.outsider,
            repository_id=self.repository_id,
        )


class ApiCommandRun(CommandRun):
    """The shared run with the API's answers: nothing said on GitHub but the assignment and
    notice; everything else is the request's answer, kept with the change."""

    def __init__(
        self, request: ApiCommand, parsed: ParsedComment, services: Services, worded: Worded
    ) -> None:
        super().__init__(request.facts(datetime.fromtimestamp(services.clock(), UTC)), parsed, services)
        self.request, self.worded = request, worded
        self.early: Message | Refusal | None = None  # why the command never reached the door
        self.kept: KeptAnswer | None = None  # the answer kept with the outcome

    def answers(self, outcome: Outcome) -> list[Answer]:
        """The claimant's assignment and the runner's notice; refusals are the request's answer."""
        return self.common_answers(outcome)

    async def say(self, message: Message) -> None:
        """Remember why the command stopped before the door; the caller answers with it."""
        self.early = message

    async def bot_not_named(self) -> None:
        """A bot no role names: refused, as a comment by it would be ignored."""
        self.early = BOT_NOT_NAMED

    async def _complete(
        self, command: Command, issue: Any | None, rules: Rules
    ) -> Command | ArtifactNotFound:
        """A pull request's number is not a ticket's: commands on a PR go to the issue it links."""
        if issue is not None and dig(issue, "pull_request") is not None:
            return ArtifactNotFound("issue", str(self.request.number), self.request.repository)
        return await super()._complete(command, issue, rules)

    async def keep(self, uow: UnitOfWork, outcome: Outcome, rules: Rules) -> None:
        """Keep the worded answer with the change (a transient refusal keeps nothing: retry); its
        status object judges `blocked_by` under the rules the command ran under."""
        if (outcome.refusal is not None and outcome.refusal.transient) or outcome.elsewhere:
            return  # another ticket's outcome is not this request's answer (`AgentApi`: 422)
        ticket = outcome.shown or await uow.ticket(outcome.ticket)
        at = datetime.fromtimestamp(self.services.clock(), UTC)
        clocks = await uow.clocks(ticket.key, ticket) if ticket is not None and ticket.exists else Clocks()
        status, body = self.worded(outcome, ticket, at, clocks, rules.rail_policy)
        r = self.request
        self.kept = await uow.keep_answer(KeptAnswer(r.account_id, r.key, r.digest, status, body, at))


def replays_an_earlier_attempt(kept: KeptAnswer, ticket: Ticket | None) -> bool:
    """Whether a kept "applied" answer was given to an attempt older than the ticket's current
    one (a workflow re-run after a send-back sending its first delivery's key again), or to the
    current attempt since released (`/reopen` leaves the ticket open with the same attempt
    number): replaying it as applied would report a claim or a delivery that no longer holds."""
    status = kept.body.get("status")
    attempt = status.get("attempt") if isinstance(status, Mapping) else None
    if kept.body.get("applied") is not True or not isinstance(attempt, int):
        return False
    if ticket is None or not ticket.exists:
        return False
    events = kept.body.get("events")
    kinds = {e.get("type") for e in events if isinstance(e, Mapping)} if isinstance(events, list) else set()
    held = bool(kinds & {"claimed", "delivered"})  # a claim or a delivery, which `/reopen` releases
    return attempt < ticket.attempt or (held and ticket.work in (WorkState.DRAFT, WorkState.OPEN))
