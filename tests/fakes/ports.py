"""Every port faked at once: `FakePorts().services` is what the worker passes a handler."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from handlers import ROUTER
from handlers.ports import Services
from handlers.routing import Router, WebhookEvent
from tests.fakes.ancestry import FakeAncestry
from tests.fakes.budgets import FakeBudgets
from tests.fakes.clock import StillClock
from tests.fakes.configs import FakeConfigs
from tests.fakes.counts import FakeCounts
from tests.fakes.github import FakeGitHub
from tests.fakes.roles import FakeRoles
from tests.fakes.store import MemoryStore

APP_ID = 4242


@dataclass
class FakePorts:
    """The in-memory store, GitHub, rules, roles, ancestry and a still clock, wired as `Services`."""

    store: MemoryStore = field(default_factory=MemoryStore)
    github: FakeGitHub = field(default_factory=FakeGitHub)
    configs: FakeConfigs = field(default_factory=FakeConfigs)
    roles: FakeRoles = field(default_factory=FakeRoles)
    ancestry: FakeAncestry = field(default_factory=FakeAncestry)
    clock: StillClock = field(default_factory=StillClock)
    app_id: int = APP_ID
    budgets: FakeBudgets = field(init=False)
    counts: FakeCounts = field(default_factory=FakeCounts)

    def __post_init__(self) -> None:
        self.budgets = FakeBudgets(self.clock)

    @property
    def services(self) -> Services:
        """The ports as handlers receive them."""
        return Services(
            store=self.store,
            github=self.github,
            configs=self.configs,
            roles=self.roles,
            ancestry=self.ancestry,
            app_id=self.app_id,
            clock=self.clock,
            budgets=self.budgets,
            counts=self.counts,
        )

    async def dispatch(
        self,
        event: str,
        payload: dict[str, Any],
        *,
        action: str | None = None,
        installation_id: int | None = None,
        delivery_id: str = "delivery-1",
        router: Router = ROUTER,
        services: Services | None = None,
        received_at: float | None = None,
    ) -> None:
        """Run a delivery through the router's handlers, as the worker does (an error propagates).

        `services`: other ports than these (the SQL store, to compare it with the fake);
        `received_at`: when railyard stored it (epoch seconds; None: unknown)."""
        action = action if action is not None else payload.get("action")
        if installation_id is None:
            found = payload.get("installation", {}).get("id")
            installation_id = found if isinstance(found, int) else None
        delivered = WebhookEvent(delivery_id, event, action, installation_id, payload, received_at)
        for handler in router.handlers_for(event, action):
            await handler(delivered, services or self.services)
