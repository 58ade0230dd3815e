"""Webhook handlers: the use cases. GitHub payloads in, domain changes out.

Handlers import only `policies/` and `handlers/`: what they need from the world is a port
(`handlers.ports`), which `app/` implements and tests fake. Each module registers its
handlers on its own `Router` by `(event, action)`; `ROUTER` combines them. The worker
dispatches every stored delivery through it.
"""

from __future__ import annotations

from handlers.base_moves import router as base_moves_router
from handlers.checks import router as checks_router
from handlers.comments import router as comments_router
from handlers.deployments import router as deployments_router
from handlers.gate import router as gate_router
from handlers.installations import router as installations_router
from handlers.issues import router as issues_router
from handlers.merge_queue import router as merge_queue_router
from handlers.meta import router as meta_router
from handlers.pull_requests import router as pull_requests_router
from handlers.pushes import router as pushes_router
from handlers.repositories import identified
from handlers.repositories import router as repositories_router
from handlers.reverts import router as reverts_router
from handlers.routing import Router

ROUTER = Router.combine(
    meta_router,
    installations_router,
    comments_router,
    issues_router,
    pull_requests_router,
    reverts_router,
    checks_router,
    pushes_router,
    base_moves_router,
    deployments_router,
    gate_router,
    merge_queue_router,
    repositories_router,
    guard=identified,
)

__all__ = ["ROUTER", "Router"]
