"""Routing by `(event, action)`, in the spirit of gidgethub's router."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from handlers.ports import Services


@dataclass(frozen=True)
class WebhookEvent:
    """A stored delivery as a handler sees it: the payload parsed, nothing validated."""

    delivery_id: str
    event: str
    action: str | None
    installation_id: int | None
    payload: dict[str, Any]
    received_at: float | None = None  # when railyard received it, on its own clock (epoch seconds)


Handler = Callable[[WebhookEvent, Services], Awaitable[None]]


class Router:
    """Handlers registered by event and, optionally, action."""

    def __init__(self) -> None:
        self._handlers: dict[tuple[str, str | None], list[Handler]] = {}

    def register(self, event: str, *actions: str) -> Callable[[Handler], Handler]:
        """Decorator: run the handler for `event` (any action unless some are named)."""

        def add(handler: Handler) -> Handler:
            for action in actions or (None,):
                self._handlers.setdefault((event, action), []).append(handler)
            return handler

        return add

    def handlers_for(self, event: str, action: str | None) -> list[Handler]:
        """The handlers for a delivery: those of its action, then those of any action."""
        specific = self._handlers.get((event, action), []) if action is not None else []
        return [*specific, *self._handlers.get((event, None), [])]

    @property
    def events(self) -> frozenset[str]:
        """Every event some handler is registered for."""
        return frozenset(event for event, _ in self._handlers)

    @classmethod
    def combine(cls, *routers: Router) -> Router:
        """One router holding every handler of `routers`."""
        combined = cls()
        for router in routers:
            for key, handlers in router._handlers.items():
                combined._handlers.setdefault(key, []).extend(handlers)
        return combined
