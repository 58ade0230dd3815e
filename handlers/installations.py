"""`installation` and `installation_repositories`: which accounts and repositories railyard serves.

GitHub sends these without the app subscribing to them.
"""

from __future__ import annotations

from typing import Any

from handlers.payloads import dig, dig_str
from handlers.ports import Services
from handlers.routing import Router, WebhookEvent

router = Router()
ACTIVE, SUSPENDED, DELETED = "active", "suspended", "deleted"
_STATUS = {
    "created": ACTIVE,
    "new_permissions_accepted": ACTIVE,
    "unsuspend": ACTIVE,
    "suspend": SUSPENDED,
    "deleted": DELETED,
}


def _names(items: Any) -> list[str]:
    if not isinstance(items, list):
        return []
    return [name for item in items if (name := dig_str(item, "full_name"))]


@router.register("installation")
async def on_installation(event: WebhookEvent, services: Services) -> None:
    """Track the installation's status (and, when created, its repositories)."""
    status = _STATUS.get(event.action or "")
    if status is None or event.installation_id is None:
        return
    account = dig_str(event.payload, "installation", "account", "login") or "unknown"
    now = services.clock()
    async with services.store.unit() as uow:
        await uow.set_installation(event.installation_id, account, status, now)
        if event.action == "created":
            await uow.set_repositories(
                event.installation_id, _names(dig(event.payload, "repositories")), True, now
            )
        await uow.commit()


@router.register("installation_repositories", "added", "removed")
async def on_repositories(event: WebhookEvent, services: Services) -> None:
    """Track repositories added to or removed from the installation."""
    if event.installation_id is None:
        return
    now = services.clock()
    added = _names(dig(event.payload, "repositories_added"))
    removed = _names(dig(event.payload, "repositories_removed"))
    async with services.store.unit() as uow:
        await uow.set_repositories(event.installation_id, added, True, now)
        await uow.set_repositories(event.installation_id, removed, False, now)
        await uow.commit()
