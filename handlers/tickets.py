"""`issues` events: an issue opened or labelled with the configured ticket label becomes a draft
ticket; closing and reopening the issue is recorded on its ticket."""

from __future__ import annotations

from datetime import UTC, datetime

from app.bootstrap import Services
from app.web.payloads import dig, dig_int, dig_str
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
    if services.configs is None or event.installation_id is None or repository is None or number is None:
        return
    loaded = await services.configs.load(event.installation_id, repository)
    label = loaded.config.tickets.label
    labels = dig(event.payload, "issue", "labels")
    names = {dig_str(item, "name") for item in labels} if isinstance(labels, list) else set()
    if label is None or loaded.error is not None or label not in names:
        return
    sender = dig_str(event.payload, "sender", "login") or "github"
    context = Context(
        actor=Actor(sender, id=dig_int(event.payload, "sender", "id")),
        # One ticket per issue, however often the label comes and goes.
        operation_id=f"ticket-label:{repository.casefold()}#{number}",
        at=datetime.fromtimestamp(services.clock(), UTC),
        policy_version=loaded.policy_version,
        environments=loaded.config.deployments.environments,
    )
    key = TicketKey(repository, number)
    services.tickets.execute(key, Draft(via_label=True), context, installation_id=event.installation_id)


@router.register("issues", "closed", "reopened")
async def on_issue_closed_or_reopened(event: WebhookEvent, services: Services) -> None:
    """Record that the issue was closed or reopened: shown on the ticket, unwatched while closed.

    WorkState does not move. An issue that is not a ticket records nothing.
    """
    repository = dig_str(event.payload, "repository", "full_name")
    number = dig_int(event.payload, "issue", "number")
    if repository is None or number is None:
        return
    closed = event.action == "closed"
    context = NoticeContext(
        actor=dig_str(event.payload, "sender", "login") or "github",
        actor_id=dig_int(event.payload, "sender", "id"),
        operation_id=f"issue-{event.action}:{event.delivery_id}",
        at=datetime.fromtimestamp(services.clock(), UTC),
        policy_version=await _policy_version(event, services, repository),
    )
    key = TicketKey(repository, number)
    services.tickets.execute(key, IssueStateObserved(closed), context, installation_id=event.installation_id)


async def _policy_version(event: WebhookEvent, services: Services, repository: str) -> str:
    if services.configs is None or event.installation_id is None:
        return ""
    return (await services.configs.load(event.installation_id, repository)).policy_version
