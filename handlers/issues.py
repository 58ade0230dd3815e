"""`issues` events: an issue opened or labelled with the configured ticket label becomes a draft
ticket; closing and reopening the issue is recorded on its ticket."""

from __future__ import annotations

from datetime import UTC, datetime

from handlers.acceptance import recheck
from handlers.payloads import dig, dig_int, dig_str, dig_time
from handlers.ports import Services
from handlers.routing import Router, WebhookEvent
from policies.acceptance import description_digest
from policies.commands import Context, Draft
from policies.model import Actor, TicketKey
from policies.notices import DescriptionEdited, IssueStateObserved, NoticeContext

router = Router()


@router.register("issues", "opened", "labeled")
async def on_issue_labelled(event: WebhookEvent, services: Services) -> None:
    """Create the draft ticket when the issue carries `tickets.label` (nothing else creates one)."""
    repository = dig_str(event.payload, "repository", "full_name")
    number = dig_int(event.payload, "issue", "number")
    if event.installation_id is None or repository is None or number is None:
        return
    rules = await services.configs.load(event.installation_id, repository)
    labels = dig(event.payload, "issue", "labels")
    names = {dig_str(item, "name") for item in labels} if isinstance(labels, list) else set()
    if rules.ticket_label is None or rules.error is not None or rules.ticket_label not in names:
        return
    sender = dig_str(event.payload, "sender", "login") or "github"
    context = Context(
        actor=Actor(sender, id=dig_int(event.payload, "sender", "id")),
        # One ticket per issue, however often the label comes and goes.
        operation_id=f"ticket-label:{repository.casefold()}#{number}",
        at=datetime.fromtimestamp(services.clock(), UTC),
        policy_version=rules.policy_version,
        environments=rules.environments,
    )
    async with services.store.unit() as uow:
        await uow.execute(
            TicketKey(repository, number),
            Draft(via_label=True),
            context,
            installation_id=event.installation_id,
        )
        await uow.commit()


@router.register("issues", "closed", "reopened")
async def on_issue_closed_or_reopened(event: WebhookEvent, services: Services) -> None:
    """Record that the issue was closed or reopened: shown on the ticket, unwatched while closed.

    WorkState does not move. An issue that is not a ticket records nothing.
    """
    repository = dig_str(event.payload, "repository", "full_name")
    number = dig_int(event.payload, "issue", "number")
    if repository is None or number is None:
        return
    version = ""
    if event.installation_id is not None:
        version = (await services.configs.load(event.installation_id, repository)).policy_version
    context = NoticeContext(
        actor=dig_str(event.payload, "sender", "login") or "github",
        actor_id=dig_int(event.payload, "sender", "id"),
        operation_id=f"issue-{event.action}:{event.delivery_id}",
        at=datetime.fromtimestamp(services.clock(), UTC),
        policy_version=version,
    )
    closed = IssueStateObserved(event.action == "closed")
    async with services.store.unit() as uow:
        await uow.execute(
            TicketKey(repository, number), closed, context, installation_id=event.installation_id
        )
        await uow.commit()


@router.register("issues", "edited")
async def on_issue_edited(event: WebhookEvent, services: Services) -> None:
    """Record `description_changed` when the title or body of a ticket's issue was edited.

    Never a WorkState change; an issue that is not a ticket records nothing. The old digest is
    the one the record holds (else the one `changes` implies); the edit's time is the issue's
    `updated_at` in the payload.
    """
    repository = dig_str(event.payload, "repository", "full_name")
    number = dig_int(event.payload, "issue", "number")
    changes = dig(event.payload, "changes")
    if repository is None or number is None or not isinstance(changes, dict):
        return
    title_changed, body_changed = "title" in changes, "body" in changes
    if not (title_changed or body_changed):
        return  # only the description counts (a milestone or a type changed)
    title, body = dig_str(event.payload, "issue", "title"), dig_str(event.payload, "issue", "body")
    old_title = dig_str(changes, "title", "from") if title_changed else title
    old_body = dig_str(changes, "body", "from") if body_changed else body
    version = ""
    if event.installation_id is not None:
        version = (await services.configs.load(event.installation_id, repository)).policy_version
    edited = DescriptionEdited(
        description_digest(old_title, old_body),
        description_digest(title, body),
        title_changed,
        body_changed,
        # When it was edited, on GitHub's clock (that of an `/accept` comment's `created_at`):
        # an edit after the comment is no text its reviewer saw, whenever the accept runs.
        edited_at=dig_time(event.payload, "issue", "updated_at"),
    )
    context = NoticeContext(
        actor=dig_str(event.payload, "sender", "login") or "github",
        actor_id=dig_int(event.payload, "sender", "id"),
        operation_id=f"issue-edited:{event.delivery_id}",
        at=datetime.fromtimestamp(services.clock(), UTC),
        policy_version=version,
    )
    async with services.store.unit() as uow:
        await uow.execute(
            TicketKey(repository, number), edited, context, installation_id=event.installation_id
        )
        await uow.commit()


@router.register("issues", "labeled")
async def on_high_risk_label(event: WebhookEvent, services: Services) -> None:
    """A high-risk label added to an accepted ticket: its acceptance is judged again at once (a
    self-verification stops holding)."""
    repository = dig_str(event.payload, "repository", "full_name")
    number = dig_int(event.payload, "issue", "number")
    label = dig_str(event.payload, "label", "name")
    if event.installation_id is None or repository is None or number is None or label is None:
        return
    rules = await services.configs.load(event.installation_id, repository)
    if label in rules.high_risk_labels:
        await recheck(services, event.installation_id, TicketKey(repository, number))
