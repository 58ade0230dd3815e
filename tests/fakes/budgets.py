"""Per-account budgets in memory (`handlers.ports.Budgets`), counted as the database counts them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from policies.budgets import Budget


@dataclass
class FakeBudgets:
    """Counts per account, scope and window, at `clock`'s now."""

    clock: Callable[[], float]
    counts: dict[tuple[int, str, float], int] = field(default_factory=dict)

    async def spend(self, account_id: int, budget: Budget) -> int | None:
        now = self.clock()
        key = (account_id, budget.scope, budget.window_start(now))
        if self.counts.get(key, 0) >= budget.limit:
            return budget.retry_after(now)
        self.counts[key] = self.counts.get(key, 0) + 1
        return None

    async def refund(self, account_id: int, budget: Budget) -> None:
        key = (account_id, budget.scope, budget.window_start(self.clock()))
        if self.counts.get(key, 0) > 0:
            self.counts[key] -= 1

    async def spent(self, account_id: int, budget: Budget) -> int:
        return self.counts.get((account_id, budget.scope, budget.window_start(self.clock())), 0)

    async def spend_and_count(
        self, account_id: int, spending: Budget, counted: Budget
    ) -> tuple[int | None, int]:
        return await self.spend(account_id, spending), await self.spent(account_id, counted)
