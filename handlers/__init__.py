"""Webhook handlers: GitHub payloads in, domain changes out.

Each module registers its handlers on its own `Router` by `(event, action)`; `ROUTER`
combines them. The worker dispatches every stored delivery through it.
"""

from __future__ import annotations

from handlers.commands import router as commands_router
from handlers.installations import router as installations_router
from handlers.merge_queue import router as merge_queue_router
from handlers.meta import router as meta_router
from handlers.rails import router as rails_router
from handlers.routing import Router
from handlers.tickets import router as tickets_router

ROUTER = Router.combine(
    meta_router, installations_router, commands_router, tickets_router, rails_router, merge_queue_router
)

__all__ = ["ROUTER", "Router"]
