"""The API's per-account budgets in the database (`api_budgets`), shared by every process.

A request spends one unit of a budget (`policies.budgets.Budget`) before railyard makes any
call with the installation's token for it. Spending is one conditional upsert: the count of
the account's row for the scope and window goes up only while it is under the limit, so two
processes cannot both take the last unit, and an account past its limit changes nothing.
Rows are per account, scope and window; `prune_budgets` (housekeeping) drops windows that are
over, so the table holds at most the accounts that used the API in the last hour or two.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import delete

from app.store.database import Database
from app.store.tables import ApiBudgetRow, table
from policies.budgets import Budget

budgets = table(ApiBudgetRow)
KEPT_FOR = 2 * 3600.0  # the longest window is an hour: older rows count for nothing


_SPEND = (
    f"INSERT INTO {budgets.name} (account_id, scope, window_start, spent) VALUES (?, ?, ?, 1) "  # noqa: S608
    "ON CONFLICT (account_id, scope, window_start) "
    f"DO UPDATE SET spent = {budgets.name}.spent + 1 WHERE {budgets.name}.spent < ? RETURNING spent"
)
_SPENT = f"SELECT spent FROM {budgets.name} WHERE account_id = ? AND scope = ? AND window_start = ?"  # noqa: S608
_SPEND_AND_COUNT = (
    f"WITH taken AS ({_SPEND}) "  # noqa: S608
    f"SELECT (SELECT count(*) FROM taken), ({_SPENT})"
)
"""PostgreSQL: `_SPEND` and `_SPENT` (of another budget's row) in one round trip. The read sees
the statement's snapshot, as the second of two statements would at READ COMMITTED, less what
commits between them; the spend is the upsert's own, under its row's lock either way."""
_REFUND = (
    f"UPDATE {budgets.name} SET spent = spent - 1 "  # noqa: S608
    "WHERE account_id = ? AND scope = ? AND window_start = ? AND spent > 0"
)
# Straight to the driver (`Database.driver_write`, `Database.write_here`): a command spends, and
# is refunded, at least once; through SQLAlchemy each cost 0.54 ms of CPU on PostgreSQL, through
# the driver 0.16 ms.


def _spending(account_id: int, budget: Budget, now: float) -> tuple[int, str, float, int]:
    """`_SPEND`'s parameters."""
    return (account_id, budget.scope, budget.window_start(now), budget.limit)


def _spend_in(database: Database, cursor: Any, account_id: int, budget: Budget, now: float) -> bool:
    return (
        cursor.execute(database.driver_sql(_SPEND), _spending(account_id, budget, now)).fetchone() is not None
    )


def spend(database: Database, account_id: int, budget: Budget, now: float) -> int | None:
    """Take one unit: None when taken, else the seconds until the window ends (nothing taken)."""
    with database.driver_write() as cursor:
        taken = _spend_in(database, cursor, account_id, budget, now)
    return None if taken else budget.retry_after(now)


def refund(database: Database, account_id: int, budget: Budget, now: float) -> None:
    """Give back one unit taken in the current window (a reservation that turned out not to cost)."""
    with database.driver_write() as cursor:
        cursor.execute(database.driver_sql(_REFUND), (account_id, budget.scope, budget.window_start(now)))


def spent(database: Database, account_id: int, budget: Budget, now: float) -> int:
    """How much of the budget the account has used in the current window."""
    row = database.point_read(_SPENT, (account_id, budget.scope, budget.window_start(now)))
    return int(row[0]) if row is not None and row[0] is not None else 0


def prune_budgets(database: Database, now: float) -> int:
    """Forget the windows that are over; return how many rows went."""
    with database.write() as connection:
        gone = connection.execute(delete(budgets).where(budgets.c.window_start < now - KEPT_FOR)).rowcount
    return int(gone or 0)


class SqlBudgets:
    """The `Budgets` port on the database, at the clock's now: each statement committed by itself
    (`Database.write_here`: on PostgreSQL on the event loop, on SQLite on a thread), each read
    on the event loop (`Database.point_read_here`)."""

    def __init__(self, database: Database, clock: Callable[[], float]) -> None:
        self._database, self._clock = database, clock

    async def spend(self, account_id: int, budget: Budget) -> int | None:
        return await self._spend(account_id, budget, self._clock())

    async def refund(self, account_id: int, budget: Budget) -> None:
        window = (account_id, budget.scope, budget.window_start(self._clock()))
        await self._database.write_here(_REFUND, window)

    async def spent(self, account_id: int, budget: Budget) -> int:
        return await self._spent(account_id, budget, self._clock())

    async def spend_and_count(
        self, account_id: int, spending: Budget, counted: Budget
    ) -> tuple[int | None, int]:
        """`spend(spending)`, then how much of `counted` (another budget) the account used, in
        one window even across an hour's end: on PostgreSQL one statement, on SQLite two."""
        now = self._clock()
        if self._database.is_sqlite:  # no INSERT in a WITH there
            return await self._spend(account_id, spending, now), await self._spent(account_id, counted, now)
        window = (account_id, counted.scope, counted.window_start(now))
        [(taken, marked)] = await self._database.write_here(
            _SPEND_AND_COUNT, (*_spending(account_id, spending, now), *window)
        )
        return (None if taken else spending.retry_after(now)), int(marked or 0)

    async def _spend(self, account_id: int, budget: Budget, now: float) -> int | None:
        taken = await self._database.write_here(_SPEND, _spending(account_id, budget, now))
        return None if taken else budget.retry_after(now)

    async def _spent(self, account_id: int, budget: Budget, now: float) -> int:
        row = await self._database.point_read_here(
            _SPENT, (account_id, budget.scope, budget.window_start(now))
        )
        return int(row[0]) if row is not None and row[0] is not None else 0
