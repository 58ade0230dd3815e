"""The database tables. The event log, attempts, delivery records and operations are
append-only: the code never updates or deletes them, and triggers (see the migrations)
refuse it at the database too.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    ForeignKey,
    Index,
    Integer,
    Table,
    Text,
    UniqueConstraint,
)
from sqlmodel import Field, SQLModel

from app.store.columns import json_field, time_field
from app.store.tables_web import ApiAnswerRow, ApiBudgetRow, HttpCacheRow, InstallationTokenRow, WebSessionRow

__all__ = [
    "ApiAnswerRow",
    "ApiBudgetRow",
    "HttpCacheRow",
    "InstallationTokenRow",
    "WebSessionRow",
]  # kept here for their readers


def table(model: type[SQLModel]) -> Table:
    """The SQLAlchemy table behind a SQLModel class, for Core statements on the hot path."""
    return SQLModel.metadata.tables[str(model.__tablename__)]


class TicketRow(SQLModel, table=True):
    """One ticket: its revision and a snapshot of the folded event log."""

    __tablename__ = "tickets"
    __table_args__ = (UniqueConstraint("repository", "number", name="uq_tickets_repository_number"),)

    id: int | None = Field(default=None, primary_key=True)
    repository: str = Field(index=True)
    number: int
    revision: int
    work: str | None
    integration: str
    deployment: str
    snapshot: dict[str, Any] = json_field()
    created_at: datetime = time_field()
    updated_at: datetime = time_field()
    # The installation that last brought news of it: the status comment is written through it.
    installation_id: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))
    # GitHub's `repository.id`: the name can be renamed and reused, the id cannot. None only for
    # a ticket stored before 0014 that no webhook has named yet (read by nobody until then).
    repository_id: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True, index=True))


class TicketEventRow(SQLModel, table=True):
    """One event of a ticket's append-only log; (ticket, revision) is unique."""

    __tablename__ = "ticket_events"
    __table_args__ = (UniqueConstraint("ticket_id", "revision", name="uq_ticket_events_revision"),)

    id: int | None = Field(default=None, primary_key=True)
    ticket_id: int = Field(sa_column=Column(Integer, ForeignKey("tickets.id"), nullable=False))
    revision: int
    type: str
    actor: str  # the login the actor had then, for people to read
    actor_id: int | None = Field(
        default=None, sa_column=Column(BigInteger, nullable=True)
    )  # the account; None before ids were stored
    role: str | None
    at: datetime = time_field()
    operation_id: str = Field(index=True)
    policy_version: str
    data: dict[str, Any] = json_field()
    # sha256 chaining this event to the ticket's previous one (policies.audit); None only when
    # written by a process older than migration 0016 (then `railyard audit verify` says so).
    digest: str | None = None


class AttemptRow(SQLModel, table=True):
    """One attempt at a ticket; numbers only rise."""

    __tablename__ = "attempts"
    __table_args__ = (UniqueConstraint("ticket_id", "number", name="uq_attempts_number"),)

    id: int | None = Field(default=None, primary_key=True)
    ticket_id: int = Field(sa_column=Column(Integer, ForeignKey("tickets.id"), nullable=False))
    number: int
    runner: str
    runner_id: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))
    opened_by: str  # the event type that opened it: claimed, sent_back, delivered
    check_in_minutes: int | None
    branch: str | None
    operation_id: str
    opened_at: datetime = time_field()


class DeliveryRecordRow(SQLModel, table=True):
    """Work handed over by `/deliver`: append-only, one per accepted `/deliver`."""

    __tablename__ = "delivery_records"

    id: int | None = Field(default=None, primary_key=True)
    ticket_id: int = Field(sa_column=Column(Integer, ForeignKey("tickets.id"), nullable=False))
    attempt_id: int = Field(sa_column=Column(Integer, ForeignKey("attempts.id"), nullable=False))
    attempt: int
    runner: str
    runner_id: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))
    summary: str
    branch: str | None
    commit_sha: str | None
    pull_request: int | None
    artifacts: list[str] = Field(sa_column=Column(JSON, nullable=False))
    comment_id: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))
    comment_at: datetime | None = time_field(nullable=True)
    operation_id: str = Field(unique=True)
    policy_version: str
    created_at: datetime = time_field()


class OperationRow(SQLModel, table=True):
    """The outcome of one operation id: replaying it returns this and writes nothing."""

    __tablename__ = "operations"

    operation_id: str = Field(primary_key=True)
    repository: str
    number: int
    ticket_id: int | None = Field(default=None, sa_column=Column(Integer, nullable=True))
    # GitHub's id of the repository (None: not known, or stored before 0029): `repository` is
    # the name it had then, never moved (`operation_rows.same_ticket`).
    repository_id: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))
    change: str
    actor: str
    actor_id: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))
    outcome: str  # applied | refused
    revision: int  # the ticket's revision after the operation (or when it was refused)
    first_revision: int | None
    refusal_code: str | None
    refusal_reason: str | None
    refusal_hint: str | None
    policy_version: str
    at: datetime = time_field()


class WebhookDeliveryRow(SQLModel, table=True):
    """One HTTP request from GitHub, stored before it is acknowledged; the worker's queue.

    Times are epoch seconds (floats): the queue compares them on every claim.
    `status`: pending (to process, possibly leased or in backoff), done, ignored, failed, rejected
    (its payload is not of its event: never processed).
    """

    __tablename__ = "webhook_deliveries"

    seq: int | None = Field(default=None, primary_key=True)
    delivery_id: str = Field(unique=True)
    event: str
    action: str | None
    installation_id: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))
    repository: str | None
    ordering_key: str | None
    status: str
    payload: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    payload_bytes: int
    received_at: float
    attempts: int = 0
    next_attempt_at: float
    lease_until: float | None = None
    lease_owner: str | None = None
    processed_at: float | None = None
    last_error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    traceparent: str | None = None  # the intake span's W3C traceparent (None: tracing was off)
    repository_id: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))  # 0026


class DeliveryRunRow(SQLModel, table=True):
    """One processing run of a delivery by one worker, recorded with its outcome (an audit trail)."""

    __tablename__ = "delivery_runs"

    id: int | None = Field(default=None, primary_key=True)
    delivery_seq: int = Field(index=True)
    worker: str
    attempt: int
    outcome: str  # done | ignored | failed | retry
    lease_kept: bool
    started_at: float
    finished_at: float


class InstallationRow(SQLModel, table=True):
    """An installation of the app; uninstalling marks it deleted and keeps every record."""

    __tablename__ = "installations"

    id: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    account: str
    status: str  # active | suspended | deleted
    updated_at: float


class AgentAccountRow(SQLModel, table=True):
    """An account seen acting under a login a repository's `agents:` listed (`handlers.agents`).

    Kept per installation, the first time: the account stays an agent after it renames, for as
    long as `agents:` lists the login. `login` is casefolded, as `agents:` compares logins.
    """

    __tablename__ = "agent_accounts"

    installation_id: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    account_id: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    login: str = Field(primary_key=True)
    seen_at: float  # when it first acted under the login (epoch seconds)


class InstallationRepositoryRow(SQLModel, table=True):
    """A repository an installation can see."""

    __tablename__ = "installation_repositories"
    __table_args__ = (UniqueConstraint("installation_id", "repository", name="uq_installation_repository"),)

    id: int | None = Field(default=None, primary_key=True)
    installation_id: int = Field(sa_column=Column(BigInteger, nullable=False))
    repository: str
    active: bool
    updated_at: float


# The queue's claim looks for the oldest pending delivery of each ordering key.
Index(
    "ix_webhook_deliveries_pending",
    WebhookDeliveryRow.__table__.c.ordering_key,  # type: ignore[attr-defined]
    WebhookDeliveryRow.__table__.c.seq,  # type: ignore[attr-defined]
    sqlite_where=WebhookDeliveryRow.__table__.c.status == "pending",  # type: ignore[attr-defined]
    postgresql_where=WebhookDeliveryRow.__table__.c.status == "pending",  # type: ignore[attr-defined]
)
Index(
    "ix_webhook_deliveries_status_seq",
    WebhookDeliveryRow.__table__.c.status,  # type: ignore[attr-defined]
    WebhookDeliveryRow.__table__.c.seq,  # type: ignore[attr-defined]
)


class OutboxEffectRow(SQLModel, table=True):
    """An intended GitHub write, recorded in the same transaction as the change that needs it.

    `dedupe_key` makes each intended effect unique: at most one visible effect per key.
    `ambiguous`: an earlier attempt may have reached GitHub (a timeout or 5xx after sending),
    so the next attempt looks before it writes again.
    """

    __tablename__ = "outbox_effects"

    id: int | None = Field(default=None, primary_key=True)
    dedupe_key: str = Field(unique=True)
    installation_id: int = Field(sa_column=Column(BigInteger, nullable=False))
    repository: str
    # GitHub's id of the repository `repository` named when the effect was enqueued (None: not
    # known then); the outbox writes only while that id still has the name.
    repository_id: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))
    kind: str
    payload: dict[str, Any] = json_field()
    status: str  # pending | done | failed
    attempts: int = 0
    # Claims since the last outcome recorded (any: done, failed, a retry time); an effect
    # claimed past the outbox's last try with none is failed without being performed.
    claims: int = 0
    ambiguous: bool = False
    next_attempt_at: float
    lease_until: float | None = None
    lease_owner: str | None = None
    created_at: float
    updated_at: float
    done_at: float | None = None
    last_error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    result: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    traceparent: str | None = None  # the span that enqueued it (None: tracing was off)


Index(
    "ix_outbox_effects_due",
    OutboxEffectRow.__table__.c.status,  # type: ignore[attr-defined]
    OutboxEffectRow.__table__.c.next_attempt_at,  # type: ignore[attr-defined]
)


class PullRequestRow(SQLModel, table=True):
    """What railyard knows of a pull request: its head and the tickets it links."""

    __tablename__ = "pull_requests"
    __table_args__ = (UniqueConstraint("repository", "number", name="uq_pull_requests_number"),)

    id: int | None = Field(default=None, primary_key=True)
    repository: str = Field(index=True)
    number: int
    head_ref: str | None = Field(default=None, index=True)
    head_sha: str | None = Field(default=None, index=True)
    url: str
    open: bool
    merged: bool
    merge_commit: str | None = None
    linked: list[int] = Field(sa_column=Column(JSON, nullable=False))
    updated_at: float
    author: str | None = None  # who opened it: a PR linking no ticket is judged by its author's roles
    # "owner/repo" of the head branch; None for a deleted fork (and rows stored before 0010):
    # only a head in this repository links tickets by branch name. Its GitHub id decides which
    # repository that is (`policies.links.same_repository`); the name, for rows without ids.
    head_repository: str | None = None
    merged_at: float | None = None  # links reported after it never count for the merge
    # A fork's PR: whether its author held a role when it was opened or edited (None: not asked).
    author_has_role: bool | None = None
    base_ref: str | None = None  # the branch it targets (None: stored before 0020)
    # GitHub's ids of its repository and of its head's (None: not known, or a deleted fork's
    # head): kept from 0025 on, ids from before it filled in where the repository's was known.
    repository_id: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))
    head_repository_id: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))
    # The merge-queue commits GitHub built for it while open at this head, the last few (from
    # 0032): their check is written again with the PR's (`app.store.queue_heads.queued_checks`).
    queue_heads: list[str] | None = Field(default=None, sa_column=Column(JSON, nullable=True))


class HeldObservationRow(SQLModel, table=True):
    """An observation about a commit that no ticket could be told about yet (a check on a head
    no linked PR has shown, a deployment status before the merge): replayed when one can."""

    __tablename__ = "held_observations"
    __table_args__ = (UniqueConstraint("repository", "fingerprint", name="uq_held_observations"),)

    id: int | None = Field(default=None, primary_key=True)
    repository: str = Field(index=True)
    subject: str = Field(index=True)  # "check:<head sha>" or "deployment:<environment>"
    fingerprint: str
    data: dict[str, Any] = json_field()
    held_at: float = Field(index=True)  # epoch seconds; expired by maintenance after the retention


class SignOfLifeRow(SQLModel, table=True):
    """The latest sign of life of one attempt's claimant, for the claim watchdog.

    One row per (ticket, attempt), moved only forward in time. `kind` says what was heard
    last: `claim` or `send-back` (the attempt opening), `comment`, `push` or `delivery`.
    `max_silence_minutes` and `policy_version` are the repository configuration in force
    when it was last read for this attempt, so the watchdog needs only the database; so are
    `max_attempt_hours` (None: no deadline) and `max_review_wait_hours` (0: not watched; None:
    stored before railyard kept it, the default applies).
    """

    __tablename__ = "signs_of_life"
    __table_args__ = (UniqueConstraint("ticket_id", "attempt", name="uq_signs_of_life_attempt"),)

    id: int | None = Field(default=None, primary_key=True)
    ticket_id: int = Field(sa_column=Column(Integer, ForeignKey("tickets.id"), nullable=False))
    attempt: int
    at: datetime = time_field()
    kind: str
    source: str  # the comment id, webhook delivery id or operation id it came from
    max_silence_minutes: int | None = None
    policy_version: str | None = None
    max_attempt_hours: int | None = None
    max_review_wait_hours: int | None = None


class ReplyRow(SQLModel, table=True):
    """A reply railyard wrote to a person (a refusal, a hint, `/help`, `/status`): the ledger of
    the per-actor reply limit, so a public repository cannot make the app a spam cannon."""

    __tablename__ = "replies"

    id: int | None = Field(default=None, primary_key=True)
    repository: str
    actor_id: int = Field(sa_column=Column(BigInteger, nullable=False))
    kind: str
    reacted: bool  # over the limit: answered with a reaction only (recorded, so a redelivery agrees)
    silent: bool = False  # over the limit with the window's reaction given: not answered at all
    operation_id: str = Field(unique=True)  # the comment answered: one reply per comment counts once
    at: datetime = time_field()


Index(
    "ix_replies_actor_at",
    ReplyRow.__table__.c.repository,  # type: ignore[attr-defined]
    ReplyRow.__table__.c.actor_id,  # type: ignore[attr-defined]
    ReplyRow.__table__.c.at,  # type: ignore[attr-defined]
)
Index(
    "ix_operations_actor_at",
    OperationRow.__table__.c.repository,  # type: ignore[attr-defined]
    OperationRow.__table__.c.actor_id,  # type: ignore[attr-defined]
    OperationRow.__table__.c.at,  # type: ignore[attr-defined]
)
Index(  # 0030: a ticket's refused commands, by its repository's id (`operation_rows.refusals`)
    "ix_operations_repository_id_number",
    OperationRow.__table__.c.repository_id,  # type: ignore[attr-defined]
    OperationRow.__table__.c.number,  # type: ignore[attr-defined]
)


class InstallationLimitRow(SQLModel, table=True):
    """GitHub's limits on one installation, shared by every railyard process on the database.

    `paused_until`: GitHub said to wait (Retry-After, an exhausted quota) until then (epoch
    seconds). `next_content_write_at`: the earliest moment the next content-creating write
    (a comment, a check-run) may leave, so writes are spaced across processes. Installation 0
    stands for the app itself (calls made with its JWT).
    """

    __tablename__ = "installation_limits"

    installation_id: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    paused_until: float = 0.0
    next_content_write_at: float = 0.0


# The release owner's listing and report (migration 0011): every page filter has an index in
# page order (newest activity first); the listing's per-row facts and the report's period
# read the events and operations by these.
_tickets = TicketRow.__table__  # type: ignore[attr-defined]
_events = TicketEventRow.__table__  # type: ignore[attr-defined]
Index(
    "ix_tickets_repository_work_activity",
    _tickets.c.repository,
    _tickets.c.work,
    _tickets.c.updated_at,
    _tickets.c.id,
)
Index("ix_tickets_repository_activity", _tickets.c.repository, _tickets.c.updated_at, _tickets.c.id)
Index("ix_tickets_activity", _tickets.c.updated_at, _tickets.c.id)
Index("ix_ticket_events_ticket_type", _events.c.ticket_id, _events.c.type, _events.c.revision)
Index("ix_ticket_events_at", _events.c.at)
Index(
    "ix_operations_repository_at",
    OperationRow.__table__.c.repository,  # type: ignore[attr-defined]
    OperationRow.__table__.c.at,  # type: ignore[attr-defined]
    OperationRow.__table__.c.operation_id,  # type: ignore[attr-defined]
)


class RepositoryRow(SQLModel, table=True):
    """Which repository (GitHub's id) a name railyard keys its records by belongs to now.

    Every table keyed by a repository name is read through this: a `repository` renamed or
    transferred event moves the name of every record of the id; a webhook naming a known name
    with another id (the name reused by a new repository) first moves the old repository's
    records away to a name no GitHub repository can have (`owner/name@ID`).
    """

    __tablename__ = "repositories"

    id: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    full_name: str = Field(index=True, unique=True)  # lowercase, as the records spell it
    updated_at: float


class GateApprovalRow(SQLModel, table=True):
    """A protection-rule request the gate answered (`app.store.gate_approvals`), approved or
    rejected, with the commit its range started from: a success of an approved one's commit, or
    of any one's base, may start a later request's range (`handlers.gate_base`).

    Keyed by GitHub's repository id, never its name (renamed, reused). One row per
    protection-rule request, written with the answer; never updated, never pruned.
    """

    __tablename__ = "gate_approvals"

    repository_id: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    environment: str = Field(primary_key=True)  # casefolded
    sha: str = Field(primary_key=True)  # lowercase
    request: str = Field(primary_key=True)  # the deployment's id, or run-RUN@SHA#DELIVERY
    run_id: int = Field(sa_column=Column(BigInteger, nullable=False))
    deployment_id: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))
    approved: bool  # False: rejected, judged or not
    answered_at: float
    base: str | None = None  # lowercase: the sha its range started from; None: judged without one
