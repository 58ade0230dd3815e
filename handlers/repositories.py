"""Repository identity: every delivery naming a repository is matched by GitHub's id first.

Records are kept under the repository's name, and a name belongs to one repository id
(`Reads.repository_at` / `repository_named`). Before any handler runs (`identified`, the
router's guard):

- the id is known under this name: go on (one read by primary key, a statement of its own);
- the id is new: if another repository held the name (the name reused), that one's records
  go to its name now, as GitHub says (`GET /repositories/{id}`), or away where no name can
  reach them; then the name is this id's, and the handlers run on a clean slate;
- the id is known under another name: GitHub is asked the id's name now; the records move
  there (a rename or transfer whose event has not arrived yet), and a delivery naming an old
  name (older than the rename) is dropped: it never touches what another repository now owns.

`repository` `renamed` and `transferred` events need nothing more than this guard.
"""

from __future__ import annotations

from datetime import datetime

import structlog

from handlers.errors import Missing
from handlers.payloads import dig, dig_int, dig_str
from handlers.ports import Services
from handlers.routing import Router, WebhookEvent

log = structlog.get_logger(__name__)
router = Router()


async def identified(event: WebhookEvent, services: Services) -> WebhookEvent | None:
    """The delivery, once its repository's records are under its name; None to drop it."""
    repository_id = dig_int(event.payload, "repository", "id")
    name = dig_str(event.payload, "repository", "full_name")
    if repository_id is None or name is None:
        return event  # an installation's or the app's own event: no one repository
    if await services.store.repository_at(repository_id) == name.casefold():
        return event  # the usual case: one statement, no transaction
    async with services.store.read() as reads:  # both names read in one snapshot
        current = await reads.repository_at(repository_id)
        holder = None if current == name.casefold() else await reads.repository_named(name)
    if current == name.casefold():
        return event
    created = _created_at(dig(event.payload, "repository", "created_at"))
    services.configs.forget(name)  # rules read for the name may be another repository's
    if current is None:
        if holder is not None:
            await _follow(services, event, holder, name)
        await _place(services, repository_id, name, created, event.installation_id)
        return event
    now = await _name_now(services, event, repository_id)
    if now is None:
        log.warning("dropped: GitHub does not know the repository", repository_id=repository_id)
        return None
    services.configs.forget(current)
    current_delivery = now.casefold() == name.casefold()  # an older one's installation may be gone
    await _place(services, repository_id, now, created, event.installation_id if current_delivery else None)
    if not current_delivery:
        log.info("dropped: the repository has been renamed since", repository_id=repository_id)
        return None
    return event


async def _follow(services: Services, event: WebhookEvent, holder: int, name: str) -> None:
    """The repository that held `name` before: its records follow it to its name now, if it has one."""
    now = await _name_now(services, event, holder)
    if now is not None and now.casefold() != name.casefold():
        await _place(services, holder, now, None, None)  # another installation may reach it now


async def _name_now(services: Services, event: WebhookEvent, repository_id: int) -> str | None:
    if event.installation_id is None:
        return None
    try:
        return await services.github.repository_name(event.installation_id, repository_id)
    except Missing:
        return None


async def _place(
    services: Services, repository_id: int, name: str, created_at: float | None, installation_id: int | None
) -> None:
    async with services.store.unit() as uow:
        await uow.place_repository(repository_id, name, created_at, services.clock(), installation_id)
        await uow.commit()


def _created_at(value: object) -> float | None:
    """`repository.created_at`: an ISO time, or epoch seconds in `push` payloads."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


@router.register("repository", "renamed", "transferred")
async def on_repository_moved(event: WebhookEvent, services: Services) -> None:
    """The records already follow the id (the guard moved them); the old name's rules are forgotten."""
    old_name = dig_str(event.payload, "changes", "repository", "name", "from")
    old_owner = dig_str(event.payload, "changes", "owner", "from", "user", "login") or dig_str(
        event.payload, "changes", "owner", "from", "organization", "login"
    )
    name = dig_str(event.payload, "repository", "full_name") or ""
    owner, _, short = name.partition("/")
    services.configs.forget(f"{old_owner or owner}/{old_name or short}")
    log.info("repository moved", repository=name, repository_id=dig_int(event.payload, "repository", "id"))


__all__ = ["identified", "router"]
