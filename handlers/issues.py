"""`issues` events: an issue opened or labelled with the configured ticket label becomes a draft
ticket; closing and reopening the issue is recorded on its ticket."""

from __future__ import annotations

from datetime import UTC, datetime

from handlers.payloads import dig, dig_int, dig_str
from handlers.ports import Services
from handlers.routing import Router, WebhookEvent
from policies.commands import Context, Draft
from policies.model import Actor, TicketKey
from policies.notices import IssueStateObserved, NoticeContext

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
