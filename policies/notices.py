"""What railyard notices about a ticket without anyone running a command.

The issue was closed, reopened or edited on GitHub, a claimed attempt has been silent past
its limit or is past its deadline, a delivery has waited past its limit for a decision, an
acceptance stopped holding, a merged PR reverted the ticket's merge (`policies.reverts`).
All are recorded through the same door as commands, and none can move a rail:
`decide_notice` only ever produces `NOTICE_EVENT_TYPES`, which the engine folds into the
ticket's flags beside the rails (`closed`, `reverts`, ...) or nothing at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from policies.events import Event, EventType
from policies.model import Ticket, same_login
from policies.refusals import Refusal, RefusalCode
from policies.reverts import RevertObserved, revert_data
from policies.states import WorkState

WATCHDOG_ACTOR = "railyard"
"""The actor recorded on `claim_overdue`: the app itself, holding no role."""


@dataclass(frozen=True)
class IssueStateObserved:
    """The issue was closed (`closed=True`) or reopened on GitHub."""

    closed: bool


@dataclass(frozen=True)
class OverdueObserved:
    """The watchdog found attempt `attempt` silent since `silent_since`, past `limit_minutes`."""

    attempt: int
    claimant: str
    silent_since: datetime
    limit_minutes: int
    reason: str = "silence"  # `silence`, or `deadline`: past `claims.max_attempt_hours` from the opening
    deadline_at: datetime | None = None  # with `deadline`: when the attempt's deadline passed
    max_attempt_hours: int | None = None


@dataclass(frozen=True)
class ReviewOverdueObserved:
    """The watchdog found the delivery `delivery` (its operation id) of attempt `attempt` waiting
    for a decision since `delivered_at`, past `max_wait_hours`."""

    attempt: int
    runner: str
    delivered_at: datetime
    max_wait_hours: int
    delivery: str
    due_at: datetime


@dataclass(frozen=True)
class AcceptanceLapsed:
    """The acceptance recorded at revision `acceptance` no longer holds, for `reason`
    (`policies.acceptance.InvalidReason`), judged at the notice's time."""

    acceptance: int
    reason: str
    expires_at: datetime | None = None


@dataclass(frozen=True)
class DescriptionEdited:
    """The issue's title or body was edited: its description digest went from `old` to `new`."""

    old_digest: str | None
    new_digest: str
    title_changed: bool = False
    body_changed: bool = False
    edited_at: datetime | None = None  # when GitHub says it was edited (`issue.updated_at`); None: not said


@dataclass(frozen=True)
class DeploymentGated:
    """The deployment gate answered GitHub about a deployment of `sha` to `environment` that
    brings this ticket: `state` (approved, rejected) and what this ticket said (`blocker`, None
    when it let the deployment go; `policies.gate.Blocker`)."""

    environment: str
    sha: str
    state: str
    blocker: str | None = None
    deployment_id: int | None = None
    run_id: int | None = None


Notice = (
    IssueStateObserved
    | OverdueObserved
    | ReviewOverdueObserved
    | AcceptanceLapsed
    | DescriptionEdited
    | RevertObserved
    | DeploymentGated
)
NOTICES = (
    IssueStateObserved,
    OverdueObserved,
    ReviewOverdueObserved,
    AcceptanceLapsed,
    DescriptionEdited,
    RevertObserved,
    DeploymentGated,
)


@dataclass(frozen=True)
class NoticeContext:
    """Who or what noticed, when it was recorded, under which policy version."""

    actor: str
    operation_id: str
    at: datetime
    policy_version: str = ""
    actor_id: int | None = None  # the account that closed or reopened the issue; None for railyard itself


def notice_name(notice: Notice) -> str:
    """How the operations table names the change."""
    if isinstance(notice, OverdueObserved):
        return "watchdog:claim_overdue"
    if isinstance(notice, ReviewOverdueObserved):
        return "watchdog:review_overdue"
    if isinstance(notice, AcceptanceLapsed):
        return "acceptance:invalidated"
    if isinstance(notice, DescriptionEdited):
        return "issue:edited"
    if isinstance(notice, RevertObserved):
        return "pull_request:reverted"
    if isinstance(notice, DeploymentGated):
        return "deployment:gated"
    return "issue:closed" if notice.closed else "issue:reopened"


def overdue_operation_id(repository: str, number: int, attempt: int, silent_since: datetime) -> str:
    """One operation per silence period: the same period found twice is recorded once."""
    since = silent_since.astimezone(UTC).isoformat()
    return f"overdue:{repository.casefold()}#{number}:{attempt}:{since}"


def deadline_operation_id(repository: str, number: int, attempt: int) -> str:
    """One operation per attempt: an attempt passes its deadline once, however often it is found."""
    return f"overdue-deadline:{repository.casefold()}#{number}:{attempt}"


def review_overdue_operation_id(repository: str, number: int, delivery: str) -> str:
    """One operation per delivery (named by its operation id): its wait is overdue once."""
    return f"review-overdue:{repository.casefold()}#{number}:{delivery}"


def invalidated_operation_id(repository: str, number: int, acceptance: int) -> str:
    """One operation per acceptance: however often (and by whatever path) it is judged lapsed,
    `acceptance_invalidated` is recorded once."""
    return f"invalidated:{repository.casefold()}#{number}:{acceptance}"


NOTICED_KEPT = 8
"""How many recorded watch periods a ticket keeps (`Ticket.noticed`): only its current attempt's
and delivery's can be noticed again, and each ends the ones before it."""


def period_of(kind: EventType, data: Mapping[str, object]) -> str | None:
    """The watch period a `claim_overdue` or `review_overdue` records, named without the
    repository: a silence by its attempt and start, a deadline by its attempt, a wait for review
    by its delivery; None for any other event."""
    if kind is EventType.CLAIM_OVERDUE:
        if data.get("reason") == "deadline":
            return f"deadline:{data.get('attempt')}"
        return f"silence:{data.get('attempt')}:{data.get('silent_since')}"
    if kind is EventType.REVIEW_OVERDUE:
        return f"review:{data.get('delivery')}"
    return None


def noticed(ticket: Ticket, event: Event) -> Ticket:
    """`ticket` with the period `event` records noted (the latest `NOTICED_KEPT`)."""
    period = period_of(event.type, event.data)
    if period is None or period in ticket.noticed:
        return ticket
    return replace(ticket, noticed=(*ticket.noticed, period)[-NOTICED_KEPT:])


def _once(ticket: Ticket, events: tuple[Event, ...]) -> tuple[Event, ...]:
    """`events`, or nothing when the period they record is already on the ticket's record."""
    return () if any(period_of(e.type, e.data) in ticket.noticed for e in events) else events


def decide_notice(ticket: Ticket, notice: Notice, ctx: NoticeContext) -> tuple[Event, ...] | Refusal:
    """The event recording the notice, nothing when it no longer holds, a refusal for a non-ticket."""
    if not ticket.exists:
        return Refusal(RefusalCode.NOT_A_TICKET, f"{ticket.key} is not a ticket.")
    if isinstance(notice, AcceptanceLapsed):
        return _lapsed(ticket, notice, ctx)
    if isinstance(notice, DescriptionEdited):
        return _edited(ticket, notice, ctx)
    if isinstance(notice, ReviewOverdueObserved):
        return _once(ticket, _review_overdue(ticket, notice, ctx))
    if isinstance(notice, RevertObserved):
        return _reverted(ticket, notice, ctx)
    if isinstance(notice, DeploymentGated):
        data = {
            "environment": notice.environment,
            "sha": notice.sha,
            "state": notice.state,
            "blocker": notice.blocker,
            "deployment_id": notice.deployment_id,
            "run_id": notice.run_id,
        }
        kind = EventType.DEPLOYMENT_GATED
        return (Event(kind, ctx.actor, None, ctx.at, ctx.operation_id, ctx.policy_version, data),)
    if isinstance(notice, IssueStateObserved):
        if notice.closed == ticket.closed:
            return ()
        kind = EventType.ISSUE_CLOSED if notice.closed else EventType.ISSUE_REOPENED
        return (Event(kind, ctx.actor, None, ctx.at, ctx.operation_id, ctx.policy_version, {}, ctx.actor_id),)
    if not still_watched(ticket, notice):
        return ()  # a sign of life, a delivery or a close came first: the silence is over
    data = {
        "attempt": notice.attempt,
        "claimant": notice.claimant,
        "silent_since": notice.silent_since.astimezone(UTC).isoformat(),
        "limit_minutes": notice.limit_minutes,
        "reason": notice.reason,
    }
    if notice.deadline_at is not None:
        data["deadline_at"] = notice.deadline_at.astimezone(UTC).isoformat()
        data["max_attempt_hours"] = notice.max_attempt_hours
    event = Event(
        EventType.CLAIM_OVERDUE, ctx.actor, None, ctx.at, ctx.operation_id, ctx.policy_version, data
    )
    return _once(ticket, (event,))


def still_watched(ticket: Ticket, notice: OverdueObserved) -> bool:
    """Whether the ticket is still claimed, open, in the same attempt by the same claimant."""
    return (
        ticket.work is WorkState.CLAIMED
        and not ticket.closed
        and ticket.attempt == notice.attempt
        and same_login(ticket.claimant, notice.claimant)
    )


def still_waiting(ticket: Ticket, notice: ReviewOverdueObserved) -> bool:
    """Whether the delivery is still the one awaiting a decision, on an open issue."""
    delivery = ticket.last_delivery
    return (
        ticket.work is WorkState.DELIVERED
        and not ticket.closed
        and delivery is not None
        and delivery.operation_id == notice.delivery
    )


def _review_overdue(ticket: Ticket, notice: ReviewOverdueObserved, ctx: NoticeContext) -> tuple[Event, ...]:
    """`review_overdue`, while the delivery judged still waits (a decision or a new attempt ends it)."""
    if not still_waiting(ticket, notice):
        return ()
    data: dict[str, object] = {
        "attempt": notice.attempt,
        "runner": notice.runner,
        "delivered_at": notice.delivered_at.astimezone(UTC).isoformat(),
        "max_wait_hours": notice.max_wait_hours,
        "due_at": notice.due_at.astimezone(UTC).isoformat(),
        "delivery": notice.delivery,
    }
    event = Event(
        EventType.REVIEW_OVERDUE, ctx.actor, None, ctx.at, ctx.operation_id, ctx.policy_version, data
    )
    return (event,)


def _reverted(ticket: Ticket, notice: RevertObserved, ctx: NoticeContext) -> tuple[Event, ...]:
    """`reverted`, once per reverted PR and reverting PR, when the reverted PR merged the ticket's
    change; recorded in the repository's name (role `github`): a merged PR, not a command."""
    data = revert_data(ticket, notice)
    if data is None:
        return ()
    event = Event(
        EventType.REVERTED,
        ctx.actor,
        "github",
        ctx.at,
        ctx.operation_id,
        ctx.policy_version,
        data,
        ctx.actor_id,
    )
    return (event,)


def _lapsed(ticket: Ticket, notice: AcceptanceLapsed, ctx: NoticeContext) -> tuple[Event, ...]:
    """`acceptance_invalidated`, once, while the acceptance judged is still the ticket's."""
    review = ticket.review
    if ticket.work is not WorkState.ACCEPTED or review is None:
        return ()
    if review.revision != notice.acceptance or review.invalidated is not None:
        return ()
    data: dict[str, object] = {
        "acceptance": notice.acceptance,
        "reason": notice.reason,
        "reviewer": review.reviewer,
        "reviewer_id": review.reviewer_id,
        "review": review.kind.value,
    }
    if notice.expires_at is not None:
        data["expires_at"] = notice.expires_at.astimezone(UTC).isoformat()
    event = Event(
        EventType.ACCEPTANCE_INVALIDATED, ctx.actor, None, ctx.at, ctx.operation_id, ctx.policy_version, data
    )
    return (event,)


def _edited(ticket: Ticket, notice: DescriptionEdited, ctx: NoticeContext) -> tuple[Event, ...]:
    """`description_changed` when the title or body now reads differently from the record.

    An edit whose text the acceptance already read and bound (made before `/accept`, its
    `issues.edited` arriving after it: GitHub does not promise the order) is recorded as read
    by the acceptance, which flags nothing, so the ticket ends the same in either order. Made
    after the accepting comment was written, it is no text the reviewer saw, even if the accept
    ran late enough to read it: a change after acceptance (as `accept_guard` records it when
    the edit is processed first)."""
    if notice.new_digest == ticket.description_digest:
        return ()
    data: dict[str, object] = {
        "old_digest": ticket.description_digest or notice.old_digest,
        "new_digest": notice.new_digest,
        "title_changed": notice.title_changed,
        "body_changed": notice.body_changed,
        "work": ticket.work.value if ticket.work else None,
    }
    if notice.edited_at is not None:
        data["edited_at"] = notice.edited_at.astimezone(UTC).isoformat()
    if _read_by_acceptance(ticket, notice):
        data["read_by_acceptance"] = True
    event = Event(
        EventType.DESCRIPTION_CHANGED,
        ctx.actor,
        None,
        ctx.at,
        ctx.operation_id,
        ctx.policy_version,
        data,
        ctx.actor_id,
    )
    return (event,)


def _read_by_acceptance(ticket: Ticket, notice: DescriptionEdited) -> bool:
    """Whether the edit's text is the one the acceptance bound, made by the time its comment was
    written (an edit whose time is not said is taken as made then)."""
    review = ticket.review
    if (
        ticket.work is not WorkState.ACCEPTED
        or review is None
        or review.description_digest != notice.new_digest
    ):
        return False
    return notice.edited_at is None or notice.edited_at <= review.written_at
