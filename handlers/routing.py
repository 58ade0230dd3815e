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
Guard = Callable[[WebhookEvent, Services], Awaitable[WebhookEvent | None]]
"""Runs before a delivery's handlers: the delivery to handle, or None to drop it."""


class Router:
    """Handlers registered by event and, optionally, action; optionally behind one guard."""

    def __init__(self, guard: Guard | None = None) -> None:
        self._handlers: dict[tuple[str, str | None], list[Handler]] = {}
        self._guard = guard

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
        found = [*specific, *self._handlers.get((event, None), [])]
        if not found or self._guard is None:
            return found
        return [_behind(self._guard, found)]

    @property
    def events(self) -> frozenset[str]:
        """Every event some handler is registered for."""
        return frozenset(event for event, _ in self._handlers)

    @classmethod
    def combine(cls, *routers: Router, guard: Guard | None = None) -> Router:
        """One router holding every handler of `routers` (behind `guard`, if given)."""
        combined = cls(guard)
        for router in routers:
            for key, handlers in router._handlers.items():
                combined._handlers.setdefault(key, []).extend(handlers)
        return combined


def _behind(guard: Guard, handlers: list[Handler]) -> Handler:
    """The handlers as one, run only for a delivery the guard lets through (as it hands it on)."""

    async def guarded(event: WebhookEvent, services: Services) -> None:
        checked = await guard(event, services)
        if checked is None:
            return
        for handler in handlers:
            await handler(checked, services)

    return guarded
