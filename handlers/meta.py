"""`ping`: GitHub's hello when the app (or a hook) is created."""

from __future__ import annotations

import structlog

from handlers.payloads import dig_int, dig_str
from handlers.ports import Services
from handlers.routing import Router, WebhookEvent

router = Router()
log = structlog.get_logger(__name__)


@router.register("ping")
async def on_ping(event: WebhookEvent, services: Services) -> None:
    """Log GitHub's greeting; there is nothing to change."""
    log.info("ping", hook_id=dig_int(event.payload, "hook_id"), zen=dig_str(event.payload, "zen"))
