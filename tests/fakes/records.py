"""What the in-memory store keeps, and the rules it keeps it by: `app/store` without SQL.

Each function here copies the semantics of its SQL twin (named in its docstring) so handlers
tested against `MemoryStore` see what they would see against `SqlStore`. Tickets are kept as
the snapshots `app.store.codec` writes, so a ticket read back is what the database gives.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from app.store.codec import ticket_from_data, ticket_to_data
from handlers.answers import Answer
from handlers.gate_ports import GateAnswer
from handlers.ports import (
    Change,
    ChangeContext,
    Heard,
    KeptAnswer,
    MergedTicket,
    Outcome,
    PullAndTickets,
    PullRequest,
    RecordedEvent,
)
from policies.clocks import end_of_second
from policies.commands import Context
from policies.deployment_facts import newest_containing
from policies.engine import apply_all
from policies.events import Event, EventType
from policies.links import SHOWING_OPEN_PULLS, shows_pull_open
from policies.model import Ticket, TicketKey
from policies.rails import Observation, fingerprint, observation_from_data, observation_to_data
from policies.refusals import Refusal, RefusalCode
from policies.states import IntegrationState
from tests.fakes.door import OPENS_ATTEMPT, change_name, decide_change, normalize, same_ticket, stale
from tests.fakes.door import spells_no_repository as key_of_caller


def _utc(moment: datetime) -> datetime:
    """A time as the database gives it back: stored as epoch seconds, read as UTC."""
    return datetime.fromtimestamp(moment.timestamp(), UTC)


@dataclass(frozen=True)
class Operation:
    """One stored operation outcome (a row of `operations`), replayed for its id."""

    key: TicketKey
    change: str
    actor_id: int | None
    at: datetime
    revision: int
    events: tuple[Event, ...] = ()
    refusal: Refusal | None = None
    ticket_id: int | None = None  # the ticket's row; None for a refusal before it existed
    repository_id: int | None = None  # GitHub's id of the repository (None: never identified)

    def replayed(self, operation_id: str, elsewhere: bool = False) -> Outcome:
        """`operation_rows.stored_outcome`: the stored outcome again, marked as a replay (nothing is
        shown), and `elsewhere` when replayed for another ticket's request."""
        if self.refusal is not None:
            # Only code, reason and hint are stored: a replayed refusal is never transient.
            refusal = Refusal(self.refusal.code, self.refusal.reason, self.refusal.hint)
            return Outcome(
                operation_id, self.key, self.revision, refusal=refusal, replayed=True, elsewhere=elsewhere
            )
        return Outcome(
            operation_id, self.key, self.revision, events=self.events, replayed=True, elsewhere=elsewhere
        )


@dataclass(frozen=True)
class Attempt:
    """An attempt a claim, send-back or new delivery opened (a row of `attempts`)."""

    key: TicketKey
    number: int
    runner: str
    runner_id: int | None
    opened_by: str
    branch: str | None
    opened_at: datetime


@dataclass(frozen=True)
class DeliveryRecord:
    """A delivery's branch and times (the columns of `delivery_records` the reads use)."""

    key: TicketKey
    attempt: int
    branch: str | None
    comment_at: datetime | None
    created_at: datetime


@dataclass(frozen=True)
class Held:
    """An observation held under a subject (a row of `held_observations`)."""

    repository: str
    subject: str
    data: dict[str, Any]
    held_at: float


@dataclass(frozen=True)
class SignOfLife:
    """The latest sign of life of one attempt (a row of `signs_of_life`)."""

    at: datetime
    kind: str
    source: str
    max_silence_minutes: int | None
    policy_version: str | None


@dataclass(frozen=True)
class Shown:
    """The surfaces (status comment, check-runs) enqueued because the ticket's state changed."""

    installation_id: int
    ticket: Ticket


@dataclass
class Records:
    """Every table the handlers' ports touch, as plain containers of immutable rows."""

    tickets: dict[TicketKey, tuple[int, dict[str, Any]]] = field(default_factory=dict)
    ticket_ids: dict[TicketKey, int] = field(default_factory=dict)  # `tickets.id`: moves with the ticket
    log: dict[TicketKey, tuple[RecordedEvent, ...]] = field(default_factory=dict)
    operations: dict[str, Operation] = field(default_factory=dict)
    attempts: list[Attempt] = field(default_factory=list)
    deliveries: list[DeliveryRecord] = field(default_factory=list)
    installation_of: dict[TicketKey, int] = field(default_factory=dict)
    pulls: dict[tuple[str, int], tuple[PullRequest, frozenset[int]]] = field(default_factory=dict)
    held: dict[tuple[str, str], Held] = field(default_factory=dict)
    signs: dict[tuple[TicketKey, int], SignOfLife] = field(default_factory=dict)
    installations: dict[int, tuple[str, str, float]] = field(default_factory=dict)
    repositories: dict[tuple[int, str], tuple[bool, float]] = field(default_factory=dict)
    answers: list[Answer] = field(default_factory=list)
    shown: list[Shown] = field(default_factory=list)
    api_answers: dict[tuple[int, str], KeptAnswer] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)  # `repositories`: id -> the records' name
    agents: dict[tuple[int, int, str], float] = field(default_factory=dict)  # `agent_accounts`: seen_at
    pending_closes: dict[str, tuple[str, int | None, int]] = field(default_factory=dict)  # name, id, runs
    gate_approvals: list[GateAnswer] = field(default_factory=list)  # `gate_approvals`: every answer

    def copy(self) -> Records:
        """A copy a unit of work can change without touching these (the rows are immutable)."""
        return Records(
            **{name: type(value)(value) for name, value in vars(self).items()}  # dict(d) or list(l)
        )

    # -- tickets (app/store/tickets.py) -----------------------------------------------

    def ticket(self, key: TicketKey) -> Ticket | None:
        """`tickets.load`: the ticket at its latest revision, or None."""
        key = normalize(key)
        row = self.tickets.get(key)
        return ticket_from_data(key, row[0], row[1]) if row else None

    def history(self, key: TicketKey) -> list[RecordedEvent]:
        """`tickets.history`: the event log, oldest first."""
        return list(self.log.get(normalize(key), ()))

    def commands_since(self, repository: str, actor_id: int, since: datetime) -> int:
        """`tickets.commands_since`: commands (applied or refused) the account ran since `since`."""
        return sum(
            1
            for op in self.operations.values()
            if op.key.repository == repository.casefold()
            and op.actor_id == actor_id
            and op.at >= since
            and op.change.startswith("/")
        )

    def merged_tickets(self, repository: str) -> list[MergedTicket]:
        """`tickets.merged_tickets`: merged tickets, each with its newest deployed commit containing it."""
        found = []
        for key in self.tickets:
            ticket = self.ticket(key)
            assert ticket is not None
            rails = ticket.rails
            if key.repository != repository.casefold() or rails.integration is not IntegrationState.MERGED:
                continue
            if rails.merge_commit:
                newest = newest_containing(rails.deployment_facts.values(), rails.merge_commits)
                found.append(MergedTicket(key.number, rails.merge_commit, newest, rails.merge_commits))
        return found

    def tickets_showing_pull(self, repository: str, number: int, before: datetime) -> set[int]:
        """`pulls.tickets_showing_pull`: tickets whose rails show the PR linked and open before `before`."""
        found = set()
        for key in self.tickets:
            ticket = self.ticket(key)
            assert ticket is not None
            if key.repository != repository.casefold() or ticket.rails.integration not in SHOWING_OPEN_PULLS:
                continue
            if shows_pull_open(ticket.rails, number, before):
                found.add(key.number)
        return found

    def execute(
        self, key: TicketKey, change: Change, context: ChangeContext, expected_revision: int | None
    ) -> Outcome:
        """`tickets._execute_once`: a stored operation id replays; else the core decides and the
        events are appended only if the ticket is still at `expected_revision` (when given)."""
        key = normalize(key)
        stored = self.operations.get(context.operation_id)
        if stored is not None:
            own_id = self._own_operation_id(key, context.operation_id, stored)
            if own_id is None:
                ids = (self.ticket_ids.get(key), repository_named(self, key.repository))
                mine = same_ticket(stored.key, stored.ticket_id, stored.repository_id, key, *ids)
                return stored.replayed(context.operation_id, elsewhere=not mine)
            context = replace(context, operation_id=own_id)
            stored = self.operations.get(own_id)
            if stored is not None:
                return stored.replayed(own_id)
        ticket = self.ticket(key) or Ticket(key)
        if expected_revision is not None and ticket.revision != expected_revision:
            refused = stale(key, context, expected_revision, ticket.revision)
            if refused.refusal is not None and not refused.refusal.transient and isinstance(context, Context):
                self._record_operation(key, change, context, ticket.revision, refusal=refused.refusal)
            return refused
        decision = decide_change(ticket, change, context)
        if isinstance(decision, Refusal):
            # Only commands have an outcome worth replaying; observations are deduplicated by the rails.
            if not decision.transient and isinstance(context, Context):
                self._record_operation(key, change, context, ticket.revision, refusal=decision)
            # A broken config file is shown on the status comment until it is fixed.
            shown = ticket if decision.code is RefusalCode.CONFIG_ERROR and ticket.exists else None
            return Outcome(context.operation_id, key, ticket.revision, refusal=decision, shown=shown)
        if not decision:
            return Outcome(context.operation_id, key, ticket.revision)
        after = apply_all(ticket, decision)
        self.tickets[key] = (after.revision, ticket_to_data(after))
        self.ticket_ids.setdefault(key, max(self.ticket_ids.values(), default=0) + 1)
        self._append(ticket, decision)
        self._record_operation(key, change, context, after.revision, events=decision)
        return Outcome(context.operation_id, key, after.revision, events=decision, shown=after)

    def _own_operation_id(self, key: TicketKey, operation_id: str, op: Operation) -> str | None:
        """`operation_rows.own_operation_id`: None when the stored operation is this ticket's (a replay);
        else the id this ticket's operation is kept under, qualified with the repository's id."""
        if op.ticket_id is None or op.ticket_id == self.ticket_ids.get(key) or key_of_caller(operation_id):
            return None  # this ticket's, or an API key on another ticket: that key reused (422)
        if normalize(op.key) != key:  # another key's (an API key raced onto another ticket): a replay
            return None
        repository_id = repository_named(self, key.repository)
        return None if repository_id is None else f"{operation_id}@{repository_id}"

    def show(self, ticket: Ticket, installation_id: int | None) -> None:
        """`tickets._show`: remember the installation; enqueue the surfaces of the new state."""
        if installation_id is not None:
            self.installation_of[ticket.key] = installation_id
        known = self.installation_of.get(ticket.key)
        if known is not None:
            self.shown.append(Shown(known, ticket))

    def _append(self, before: Ticket, events: tuple[Event, ...]) -> None:
        """`tickets._append`: the events, and the attempts and delivery records they imply."""
        key, attempt = before.key, before.attempt
        log = self.log.get(key, ())
        for offset, event in enumerate(events, start=1):
            log += (RecordedEvent(before.revision + offset, event),)
            if event.type in OPENS_ATTEMPT and event.data["attempt"] > attempt:
                attempt = event.data["attempt"]
                self.attempts.append(_attempt(key, before, event))
            if event.type is EventType.DELIVERED:
                comment_at = event.data["comment_at"]
                self.deliveries.append(
                    DeliveryRecord(
                        key,
                        event.data["attempt"],
                        event.data["branch"],
                        datetime.fromisoformat(comment_at) if comment_at else None,
                        event.at,
                    )
                )
        self.log[key] = log

    def _record_operation(
        self,
        key: TicketKey,
        change: Change,
        context: ChangeContext,
        revision: int,
        *,
        events: tuple[Event, ...] = (),
        refusal: Refusal | None = None,
    ) -> None:
        actor_id = context.actor.id if isinstance(context, Context) else context.actor_id
        self.operations[context.operation_id] = Operation(
            key,
            change_name(change),
            actor_id,
            context.at,
            revision,
            events,
            refusal,
            self.ticket_ids.get(key),
            repository_named(self, key.repository),
        )

    # -- pull requests (app/store/pulls.py) ---------------------------------------------

    def remember(self, pull: PullRequest, linked: set[int]) -> set[int]:
        """`pulls.remember`: store the PR unless a newer state is stored; the links it had before."""
        row_key = (pull.repository.casefold(), pull.number)
        row = self.pulls.get(row_key)
        before = set(row[1]) if row else set()
        if row is not None and row[0].updated_at > pull.updated_at:
            return before  # an older event arrived late: keep the newer state
        if row is not None and row[0].merged and pull.merged:
            linked = before  # a merged PR keeps the links it had when it merged
        stored = replace(
            pull,
            repository=pull.repository.casefold(),
            updated_at=_utc(pull.updated_at),
            merged_at=_utc(pull.merged_at) if pull.merged_at else None,
        )
        self.pulls[row_key] = (stored, frozenset(linked))
        return before

    def pulls_where(self, repository: str, sha: str | None, ref: str | None) -> list[PullAndTickets]:
        """`pulls.pulls_where`: stored PRs with this head; a head branch never matches a fork's."""
        found = [
            (pull, set(linked))
            for (repo, _), (pull, linked) in self.pulls.items()
            if repo == repository.casefold() and sha in (None, pull.head_sha) and ref in (None, pull.head_ref)
        ]
        return [(pull, linked) for pull, linked in found if ref is None or pull.head_in_repository]

    def open_linked_into(self, repository: str, branch: str) -> list[PullAndTickets]:
        """`pulls.open_linked_into`."""
        found = self.pulls_where(repository, None, None)
        into = [(p, ls) for p, ls in found if p.open and ls and p.base_ref in (branch, None)]
        return sorted(into, key=lambda item: -item[0].number)

    def stored_pull(self, repository: str, number: int) -> PullAndTickets | None:
        """`pulls.stored_pull`."""
        row = self.pulls.get((repository.casefold(), number))
        return (row[0], set(row[1])) if row else None

    def tickets_on_branch(
        self, repository: str, branch: str, head_in_repository: bool, reported_by: datetime | None
    ) -> set[int]:
        """`pulls.tickets_on_branch`: tickets whose claim or delivery reported `branch` (by `reported_by`)."""
        if not head_in_repository:
            return set()
        repository = repository.casefold()
        delivered = {
            d.key.number
            for d in self.deliveries
            if d.key.repository == repository
            and d.branch == branch
            and (reported_by is None or (d.comment_at or d.created_at) < end_of_second(reported_by))
        }
        claimed = {
            a.key.number
            for a in self.attempts
            if a.key.repository == repository
            and a.branch == branch
            and (reported_by is None or a.opened_at < end_of_second(reported_by))
        }
        return delivered | claimed

    def attempt_opened_by(self, repository: str, number: int, when: datetime) -> bool:
        """`pulls.attempt_opened_by`."""
        key = normalize(TicketKey(repository, number))
        return any(a.key == key and a.opened_at < end_of_second(when) for a in self.attempts)

    # -- held observations (app/store/held.py) ------------------------------------------

    def hold(
        self, repository: str, subject: str, observation: Observation, now: float, per_subject: bool
    ) -> None:
        """`held.hold`: once per repository and fingerprint (and subject, when `per_subject`)."""
        identity = f"{subject}:{fingerprint(observation)}" if per_subject else fingerprint(observation)
        row_key = (repository.casefold(), identity)
        if row_key not in self.held:
            data = observation_to_data(observation)
            self.held[row_key] = Held(repository.casefold(), subject, data, now)

    def held_for(self, repository: str, subject: str) -> list[Observation]:
        """`held.held_for`: oldest first."""
        return [
            observation_from_data(row.data)
            for row in self.held.values()
            if row.repository == repository.casefold() and row.subject == subject
        ]

    # -- signs of life (app/store/signs.py) ---------------------------------------------

    def record_sign_of_life(self, heard: Heard) -> bool:
        """`signs.record_sign_of_life`: only for a ticket, only forward in time; a given limit replaces."""
        key = normalize(heard.key)
        if key not in self.tickets:
            return False
        row_key = (key, heard.attempt)
        sign = self.signs.get(row_key) or SignOfLife(
            heard.at, heard.kind, heard.source, heard.max_silence_minutes, heard.policy_version
        )
        if sign.at < heard.at:
            sign = replace(sign, at=heard.at, kind=heard.kind, source=heard.source)
        if heard.max_silence_minutes is not None:
            sign = replace(
                sign, max_silence_minutes=heard.max_silence_minutes, policy_version=heard.policy_version
            )
        self.signs[row_key] = sign
        return True


def _attempt(key: TicketKey, before: Ticket, event: Event) -> Attempt:
    """`tickets._open_attempt`: a send-back reopens for the runner, the others for their actor."""
    if event.type is EventType.SENT_BACK:
        runner, runner_id = event.data["runner"], event.data.get("runner_id")
    else:
        runner, runner_id = event.actor, event.actor_id
    branch = event.data.get("branch", before.attempt_branch)
    return Attempt(key, event.data["attempt"], runner, runner_id, event.type.value, branch, event.at)


# -- repositories (app/store/repositories.py) --------------------------------------------


def repository_named(records: Records, name: str) -> int | None:
    """`repositories.repository_named`."""
    return next((i for i, n in records.names.items() if n == name.casefold()), None)


def place(records: Records, repository_id: int, name: str, installation_id: int | None = None) -> None:
    """`repositories.place` (without the legacy adoption: memory has no rows from before ids)."""
    name = name.casefold()
    holder = repository_named(records, name)
    if holder != repository_id:
        _place(records, repository_id, name, holder)
    if installation_id is not None:
        for key in [key for key in records.tickets if key.repository == name]:
            records.installation_of[key] = installation_id


def place_all(records: Records, names: Mapping[int, str]) -> None:
    """`repositories.place_all`: each id whose records are under another name steps aside first."""
    for repository_id, name in names.items():
        current = records.names.get(repository_id)
        if current is not None and current != name.casefold():
            move(records, current, f"{current}@moving-{repository_id}")
            records.names[repository_id] = f"{current}@moving-{repository_id}"
    for repository_id, name in names.items():
        place(records, repository_id, name)


def _place(records: Records, repository_id: int, name: str, holder: int | None) -> None:
    if holder is not None:
        retired = f"{name}@{holder}"
        move(records, name, retired)
        records.names[holder] = retired
    current = records.names.get(repository_id)
    if current is not None:
        move(records, name, f"{name}@unheld")  # no id holds `name`: what it keeps is no one's
        move(records, current, name)
    records.names[repository_id] = name


def move(records: Records, old: str, new: str) -> None:
    """Every record kept under the name `old` now under `new`."""

    def key(k: TicketKey) -> TicketKey:
        return TicketKey(new, k.number) if k.repository.casefold() == old else k

    def named(repository: str) -> str:
        return new if repository.casefold() == old else repository

    def head(pull: PullRequest) -> str | None:
        return None if pull.head_repository is None else named(pull.head_repository)

    records.tickets = {key(k): v for k, v in records.tickets.items()}
    records.ticket_ids = {key(k): v for k, v in records.ticket_ids.items()}
    records.log = {key(k): v for k, v in records.log.items()}
    records.attempts = [replace(a, key=key(a.key)) for a in records.attempts]
    records.deliveries = [replace(d, key=key(d.key)) for d in records.deliveries]
    records.installation_of = {key(k): v for k, v in records.installation_of.items()}
    records.pulls = {
        (named(r), n): (replace(p, repository=named(p.repository), head_repository=head(p)), linked)
        for (r, n), (p, linked) in records.pulls.items()
    }
    records.held = {
        (named(r), i): replace(h, repository=named(h.repository)) for (r, i), h in records.held.items()
    }
    records.signs = {(key(k), a): v for (k, a), v in records.signs.items()}
    records.repositories = {(i, named(r)): v for (i, r), v in records.repositories.items()}
