"""One command, however it came (a comment, or the HTTP API): from its text to its outcome.

The ticket is found (the issue itself, or the single ticket a pull request links); the actor's
roles are resolved now, from the repository's configuration and GitHub; labels, assignees and
commits are read now; and the command goes through the one door in one unit of work with the
answers its outcome calls for. How an outcome is answered is the channel's: a comment gets a
reaction or a reply (`handlers.comments`), an API request its JSON answer (`handlers.api`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog

from handlers.acceptance import AcceptFacts, accept_facts, digest_of, labels_of, recheck
from handlers.agents import is_agent, remember_listed
from handlers.answers import (
    Answer,
    ArtifactNotFound,
    Assign,
    CannotRunYet,
    Malformed,
    Message,
    NearMiss,
    PullTarget,
    ReopenedNotice,
    SentBackNotice,
    Unassign,
)
from handlers.delivered_commit import resolved
from handlers.errors import CannotVerify, Missing
from handlers.observe import Source, delivered_branch, merged_now, recheck_merged, tell_held
from handlers.payloads import dig, dig_int, dig_str
from handlers.ports import Outcome, Rules, Services, UnitOfWork
from handlers.signs import signs_from_events
from policies.budgets import repository_scope, status_recheck_budget
from policies.commands import Accept, Claim, Command, Context, Deliver, Draft, Publish, Reopen, SendBack
from policies.evidence import month_start
from policies.links import linked_issues, same_repository
from policies.model import Actor, TicketKey
from policies.parser import ParsedComment
from policies.states import Role
from policies.transitions import deciding_roles, needs_a_role, roles_in_rows

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class CommandFacts:
    """Where a command was written, by which account, when, and the operation id it runs under."""

    installation_id: int
    repository: str
    number: int  # the issue, or the pull request the command was written on
    on_pull_request: bool
    operation_id: str  # a comment's id; an API request's account-scoped idempotency key
    at: datetime  # when it was written
    author: str
    author_id: int  # the account; `author` is only the login it has now
    author_is_bot: bool
    comment_id: int | None = None  # the comment that carried it (None: an API request)
    received_at: datetime | None = None  # when railyard received the comment (its own clock)
    via: str | None = None  # "api" for the HTTP API, recorded on every event
    outsider: bool = False  # the author was lately found without a role here (fewer calls to ask again)
    repository_id: int | None = None  # GitHub's id: the budgets here count under it (None: not given)


class CommandRun:
    """One command's run; a channel answers it by overriding `answers`, `say` and `keep`."""

    def __init__(self, facts: CommandFacts, parsed: ParsedComment, services: Services) -> None:
        self.facts, self.parsed, self.services = facts, parsed, services
        self.roles: frozenset[Role] | None = None  # the author's roles, once resolved
        self.roles_asked = False  # GitHub was asked for them (None after it: it would not say)
        self.door_committed = False  # the door's unit is committing: from then on the command may have run
        self.read_pull = False  # GitHub was asked for the PR the command was written on
        self.logins_now: dict[int, str | None] = {}
        """Accounts' logins as GitHub says them now (None: no such account any more), for answers
        that unassign or mention a claimant recorded earlier (`_login_now`)."""

    # -- what a channel decides ---------------------------------------------------------

    def answers(self, outcome: Outcome) -> list[Answer]:
        """The GitHub writes the outcome calls for, enqueued with it."""
        return self.common_answers(outcome)

    async def say(self, message: Message) -> None:
        """Answer a command that did not reach the door (it names no ticket, no such commit...)."""

    async def keep(self, uow: UnitOfWork, outcome: Outcome, rules: Rules) -> None:
        """Anything the channel records with the outcome, in the same unit (`rules`: those the
        command ran under)."""

    async def bot_not_named(self) -> None:
        """The author is another bot that no role names by login: nothing runs."""

    async def informational(self, key: TicketKey, rules: Rules) -> None:
        """`/status` or `/help`: nothing changes; the channel answers (under `rules`, read for it)."""

    async def admitted(self, rules: Rules) -> bool:
        """Whether the command may go on to ask its author's roles of GitHub (a channel's budget;
        the API spends its own before the run)."""
        return True

    async def within_command_budget(self, rules: Rules) -> bool:
        """Whether the author had one of its `limits.commands_per_hour` left, now spent (the API
        spends it before the run, so here it is the comment's to spend)."""
        return True

    # -- the run ------------------------------------------------------------------------

    async def run(self) -> Outcome | None:
        """Find the ticket, resolve roles and facts, execute, answer; None when it never reached the door."""
        f, services = self.facts, self.services
        rules = await services.configs.load(f.installation_id, f.repository, fresh=True)
        if f.author_is_bot and not rules.names_login(f.author):
            await self.bot_not_named()  # other bots act only when a role names them by login
            return None
        if self.parsed.error:
            await self.say(Malformed(self.parsed.error))
            return None
        if self.parsed.near_miss:
            await self.say(NearMiss(*self.parsed.near_miss))
            return None
        command = self.parsed.command
        # Admitted before a pull request is read for its ticket (`/help` and `/status` too: that
        # read is a call): past its budget an outsider's command on a PR asks GitHub nothing.
        if (self.parsed.informational is None or f.on_pull_request) and not await self.admitted(rules):
            return None
        number = await self._ticket_number()
        if self.read_pull and (number is None or self.parsed.informational is not None):
            await self._roles_for_read(rules)
        if number is None:
            return None
        key = TicketKey(f.repository, number)
        if self.parsed.informational is not None:
            if self.parsed.word == "status" and await self._may_recheck(key):
                await recheck(services, f.installation_id, key)  # the answer says whether it holds
            await self.informational(key, rules)
            return None
        assert command is not None
        within_budget = await self.within_command_budget(rules)
        f = self.facts  # the channel may know more of the author now (`outsider`)
        try:
            deciding = deciding_roles(command)  # then the first role held is all that counts
            self.roles_asked = True
            roles = self.roles = await services.roles.roles(
                f.installation_id, f.repository, f.author, rules, deciding or roles_in_rows(command),
                first_only=deciding is not None, outsider=f.outsider,
            )  # fmt: skip
            if not roles and not f.outsider:  # none of these: is it role-less (then asked as a stranger)?
                await self._roles_for_read(rules, asked=deciding or roles_in_rows(command))
            issue: Any | None = None
            completed: Command | ArtifactNotFound = command
            accepting = AcceptFacts()
            if roles or not needs_a_role(command):
                # Without a role that can allow it the door refuses it whatever the issue or the
                # commit say, so neither is asked of GitHub (an outsider costs no reads).
                issue = (
                    await services.github.issue(f.installation_id, f.repository, number)
                    if _reads_issue(command)
                    else None
                )
                completed = await self._complete(command, issue, rules)
                if isinstance(command, Accept):
                    accepting = await self._accepting(key, issue, rules, roles)
                elif isinstance(command, Reopen):  # an agent's reopen never counts attempts afresh
                    accepting = await self._agent(rules)
            elif isinstance(command, Accept):  # an agent is told it is one, not that it lacks a role
                accepting = await self._agent(rules)
        except CannotVerify as error:
            await self.say(CannotRunYet(str(error)))
            raise
        if isinstance(completed, ArtifactNotFound):
            await self.say(completed)
            return None
        high_risk = issue is not None and bool(labels_of(issue) & set(rules.high_risk_labels))
        context = await self._context(Actor(f.author, roles, f.author_id), rules, high_risk, within_budget)
        context = replace(
            context,
            ci_state=accepting.ci_state,
            ci_checks=accepting.ci_checks,
            tree=accepting.tree,
            description_digest=accepting.description_digest or _digest_if_publish(command, issue),
            reviewer_roles=accepting.reviewer_roles,
            actor_is_agent=accepting.actor_is_agent,
        )
        if isinstance(completed, Reopen | SendBack):
            await self._ask_claimant_login(key)
        outcome = await self._execute(key, completed, context, rules)
        if not outcome.replayed:  # a replay was counted when it first ran
            services.counts.count_command(command.name, outcome)
        log.info(
            "command",
            command=self.parsed.word,
            via=f.via or "comment",
            applied=outcome.applied,
            replayed=outcome.replayed,
            refusal=outcome.refusal.code.value if outcome.refusal else None,
        )
        return outcome

    async def _execute(self, key: TicketKey, command: Command, context: Context, rules: Rules) -> Outcome:
        """The one door and everything that goes with its outcome, in one unit."""
        f, services, number = self.facts, self.services, key.number
        async with services.store.unit() as uow:
            outcome = await uow.execute(
                key,
                command,
                context,
                expected_revision=self.parsed.expected_revision,
                installation_id=f.installation_id,
            )
            if outcome.answerable:
                await uow.send(*self.answers(outcome))
            # An agent listed by login stays one after a rename (`handlers.agents`).
            await remember_listed(uow, f.installation_id, f.author, f.author_id, rules, services.clock())
            merged: list[int] = []
            # A replay's effects were made with it, in its own unit: never again, and never on
            # another ticket (an API key sent for two tickets at once replays the first's outcome).
            fresh = outcome.applied and not outcome.replayed
            if fresh:  # an attempt opened or a delivery: the watchdog's start or sign of life
                for heard in signs_from_events(key, outcome.events, f.at, f.operation_id, rules):
                    await uow.record_sign_of_life(heard)
            if fresh and isinstance(command, Publish):  # news of the issue from before
                merged = await tell_held(uow, services, f.repository, rules, number, f.installation_id)
            if fresh and isinstance(command, Deliver) and command.branch:
                operation = f"delivered:{f.operation_id}"
                merged += await delivered_branch(
                    uow, services, f.repository, rules, number, command.branch, command.commit, operation
                )
            if outcome.replayed and isinstance(command, Publish | Deliver):
                # The first run committed and then failed (or died) before its merge's deployments
                # were checked: its retry checks them, as the first would have (nothing twice).
                merged = await merged_now(uow, key)
            await self.keep(uow, outcome, rules)
            self.door_committed = True  # before the await: a commit that lands while it is cancelled counts
            await uow.commit()
        await recheck_merged(
            services, f.repository, rules, merged, Source("railyard", "held", f.installation_id)
        )
        return outcome

    def common_answers(self, outcome: Outcome) -> list[Answer]:
        """What every channel's applied command writes: the claimant's assignment, the runner's notice,
        a reopened ticket's previous claimant unassigned and told."""
        f = self.facts
        if outcome.refusal is not None:
            return []
        answers: list[Answer] = []
        last = outcome.events[-1] if outcome.events else None
        number = outcome.ticket.number
        if last is not None and last.type.value == "claimed":
            answers.append(
                Assign(f.installation_id, f.repository, number, (last.actor,), f"claim:{f.operation_id}")
            )
        if last is not None and last.type.value == "sent_back":
            runner = self._login_now(last.data.get("runner_id"), last.data.get("runner"))
            answers.append(
                SentBackNotice(
                    f.installation_id,
                    f.repository,
                    number,
                    str(runner) if runner else None,
                    last.data.get("attempt"),
                    f.author,
                    str(last.data.get("feedback", "")),
                    f"sent-back:{f.operation_id}",
                )
            )
        reopened = next((e for e in outcome.events if e.type.value == "reopened"), None)
        if reopened is not None and reopened.data.get("previous_claimant"):
            answers += self._reopened(number, reopened.data)
        return answers

    def _reopened(self, number: int, data: Mapping[str, Any]) -> list[Answer]:
        """The previous claimant unassigned and told why (named, not mentioned, when they gave it up:
        then by the login they have now, the author's, in case they were renamed since the claim)."""
        f = self.facts
        released = bool(data.get("released_by_claimant"))
        claimant = (
            f.author
            if released
            else self._login_now(data.get("previous_claimant_id"), data["previous_claimant"])
        )
        if claimant is None:  # the account is gone: its old login may be someone else's now
            return []
        return [
            Unassign(f.installation_id, f.repository, number, (claimant,), f"reopen:{f.operation_id}"),
            ReopenedNotice(
                f.installation_id,
                f.repository,
                number,
                claimant,
                f.author,
                str(data.get("reason", "")),
                released,
                f"reopened:{f.operation_id}",
            ),
        ]

    async def _ask_claimant_login(self, key: TicketKey) -> None:
        """Before a command that unassigns or mentions the claimant: the login their account has
        now. The one recorded at the claim may have been renamed away and registered by someone
        else since (SPEC *Identity*)."""
        async with self.services.store.read() as reads:
            ticket = await reads.ticket(key)
        account = ticket.claimant_id if ticket is not None else None
        owner = ticket is not None and ticket.owner_id == self.facts.author_id
        if account is None or not (self.roles or owner):  # an outsider costs no reads
            return
        try:
            self.logins_now[account] = await self.services.github.login_of(
                self.facts.installation_id, account
            )
        except Missing:
            self.logins_now[account] = None
        except CannotVerify as error:  # the recorded login then, as before
            log.warning("claimant_login_unverified", ticket=str(key), error=str(error))

    def _login_now(self, account: object, recorded: object) -> str | None:
        """The account's login as asked before the door (None: gone), else the recorded one."""
        if isinstance(account, int) and account in self.logins_now:
            return self.logins_now[account]
        return str(recorded) if recorded else None

    # -- finding the ticket ------------------------------------------------------------

    async def _roles_for_read(self, rules: Rules, asked: Iterable[Role] = ()) -> None:
        """A pull request was read for a command whose roles are asked no further (it names no
        ticket of the PR, or it only asks for information): ask them now, whether the author holds
        any role at all, so that read is spent from the author's role-less requests only when it
        holds none (`handlers.outsiders.settle`). Also asked when a command's author holds none of
        the roles that command asked for: only an author holding no role at all is taken for
        role-less (and asked as a stranger for ten minutes). GitHub not saying leaves them unknown."""
        f, others = self.facts, tuple(role for role in Role if role not in set(asked))
        self.roles_asked = True
        try:
            self.roles = await self.services.roles.roles(
                f.installation_id, f.repository, f.author, rules, others, first_only=True,
                outsider=f.outsider,
            )  # fmt: skip
        except CannotVerify:
            self.roles = None

    async def _ticket_number(self) -> int | None:
        """The issue itself; on a PR, the ticket it links (or the one named with #N)."""
        f = self.facts
        target = self.parsed.target
        if not f.on_pull_request:
            if target is not None and target != f.number:  # meant for another ticket: never this one
                await self.say(PullTarget(target, (), issue=f.number))
                return None
            return f.number
        self.read_pull = True  # an installation-token call, whatever comes of it
        pull = await self.services.github.pull(f.installation_id, f.repository, f.number)
        from_body = linked_issues(dig_str(pull, "body"), f.repository)
        head = dig_str(pull, "head", "ref")
        own = same_repository(  # a fork's branch links nothing, by GitHub's ids
            dig_int(pull, "head", "repo", "id"), dig_int(pull, "base", "repo", "id"),
            head_repository=dig_str(pull, "head", "repo", "full_name"), repository=f.repository,
        )  # fmt: skip
        delivered: set[int] = set()
        async with self.services.store.read() as reads:
            if head:
                delivered = await reads.tickets_on_branch(f.repository, head, head_in_repository=own)
            stored = await reads.stored_pull(f.repository, f.number)  # the sidebar's and patterns' too
        linked = sorted(from_body | delivered | (stored[1] if stored else set()))
        if target is not None and target in linked:
            return target
        if target is None and len(linked) == 1:
            return linked[0]
        await self.say(PullTarget(target, tuple(linked)))
        return None

    # -- facts read at execution time --------------------------------------------------

    async def _complete(
        self, command: Command, issue: Any | None, rules: Rules
    ) -> Command | ArtifactNotFound:
        """Fill in what only GitHub knows now: the description and owner, the delivered commit."""
        if isinstance(command, Publish):
            labels = labels_of(issue)
            assignees = [a for a in dig(issue, "assignees") or [] if dig_str(a, "login") and dig_int(a, "id")]
            return replace(
                command,
                description=dig_str(issue, "body") or "",
                first_assignee=dig_str(assignees[0], "login") if assignees else None,
                first_assignee_id=dig_int(assignees[0], "id") if assignees else None,
                no_code=command.no_code or rules.no_code_label in labels,
                labels=tuple(sorted(labels)),
            )
        if isinstance(command, Deliver):
            return await resolved(self.services.github, self.facts, command)
        return command

    async def _may_recheck(self, key: TicketKey) -> bool:
        """Whether this `/status` may ask GitHub to judge the acceptance again: once a minute per
        ticket, so a flood of `/status` by anyone costs the installation one re-check a minute."""
        budget = status_recheck_budget(repository_scope(self.facts.repository_id, key.repository), key.number)
        return await self.services.budgets.spend(0, budget) is None

    async def _agent(self, rules: Rules) -> AcceptFacts:
        """Whether the author is an agent: a Bot or a listed login costs nothing to know; a listed
        login its account acted under before, one read of the store; a listed team, one membership
        read (for an author without a role, after the outsider's budget was spent, as its role
        checks are)."""
        f = self.facts
        agent = await is_agent(
            self.services, f.installation_id, f.repository, f.author, f.author_id, f.author_is_bot, rules
        )
        return AcceptFacts(actor_is_agent=agent)

    async def _accepting(
        self, key: TicketKey, issue: Any, rules: Rules, roles: frozenset[Role]
    ) -> AcceptFacts:
        """What an `/accept` binds and is judged by: whether its author is an agent (asked first:
        an agent's `/accept` reads nothing more), the delivered commit's tree and CI, the
        description, a renewed acceptance's reviewer's roles now."""
        f, services = self.facts, self.services
        agent = (await self._agent(rules)).actor_is_agent
        if agent and rules.acceptance_by != "anyone":
            return AcceptFacts(actor_is_agent=True)
        found = await accept_facts(services, f.installation_id, key, issue, rules, f.author_id, roles)
        return replace(found, actor_is_agent=agent)

    async def _context(self, actor: Actor, rules: Rules, high_risk: bool, within_budget: bool) -> Context:
        f = self.facts
        now = datetime.fromtimestamp(self.services.clock(), UTC)
        month_cost = "0"
        async with self.services.store.read() as reads:
            # The budget spent before the run (one conditional upsert) is the judge: a count read
            # here misses commands running at this moment, and counts refusals past the budget,
            # so it is read only for the refusal's words.
            recent = 0
            if not within_budget:
                ran = await reads.commands_since(f.repository, f.author_id, now - timedelta(hours=1))
                recent = max(ran, rules.commands_per_hour)
            if rules.cost_per_runner_month is not None and isinstance(self.parsed.command, Claim):
                month_cost = await reads.delivery_cost_since(f.repository, f.author_id, month_start(now))
        return Context(
            actor=actor,
            operation_id=f.operation_id,
            at=now,
            comment_id=f.comment_id,
            comment_at=f.at,
            received_at=f.received_at,
            policy_version=rules.policy_version,
            high_risk=high_risk,
            self_verification=rules.self_verification,
            environments=rules.environments,
            commands_last_hour=recent,
            commands_per_hour=rules.commands_per_hour,
            config_error=rules.error,
            on_pull_request=f.on_pull_request,
            via=f.via,
            acceptance_expires_after_days=rules.acceptance_expires_after_days,
            acceptance_ci_required=rules.acceptance_ci == "require",
            agents_may_accept=rules.acceptance_by == "anyone",
            attempts_per_ticket=rules.attempts_per_ticket,
            cost_per_ticket=rules.cost_per_ticket,
            cost_per_runner_month=rules.cost_per_runner_month,
            runner_month_cost=month_cost,
        )


def _reads_issue(command: Command) -> bool:
    """Whether the command needs the issue as it is now: `/publish` its body, first assignee and
    labels, `/accept` its description (bound to the acceptance) and high-risk labels, `/draft`
    that it exists. No other command reads it (every comment changes the issue, so its read
    could never be a free 304)."""
    return isinstance(command, Publish | Draft | Accept)


def _digest_if_publish(command: Command, issue: Any) -> str | None:
    """The description digest `/publish` records."""
    return digest_of(issue) if isinstance(command, Publish) else None
