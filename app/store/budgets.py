"""The API's per-account budgets in the database (`api_budgets`), shared by every process.

A request spends one unit of a budget (`policies.budgets.Budget`) before railyard makes any
call with the installation's token for it. Spending is one conditional upsert: the count of
the account's row for the scope and window goes up only while it is under the limit, so two
processes cannot both take the last unit, and an account past its limit changes nothing.
Rows are per account, scope and window; `prune_budgets` (housekeeping) drops windows that are
over, so the table holds at most the accounts that used the API in the last hour or two.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection, delete, select
from sqlalchemy.dialects import postgresql, sqlite

from app.store.database import Database
from app.store.tables import ApiBudgetRow, table
from policies.budgets import Budget

budgets = table(ApiBudgetRow)
KEPT_FOR = 2 * 3600.0  # the longest window is an hour: older rows count for nothing


def _spend_in(
    connection: Connection, dialect_insert: Any, account_id: int, budget: Budget, now: float
) -> bool:
    row = dialect_insert(budgets).values(
        account_id=account_id, scope=budget.scope, window_start=budget.window_start(now), spent=1
    )
    statement = row.on_conflict_do_update(
        index_elements=["account_id", "scope", "window_start"],
        set_={"spent": budgets.c.spent + 1},
        where=budgets.c.spent < budget.limit,
    ).returning(budgets.c.spent)
    return connection.execute(statement).first() is not None


def spend(database: Database, account_id: int, budget: Budget, now: float) -> int | None:
    """Take one unit: None when taken, else the seconds until the window ends (nothing taken)."""
    insert = sqlite.insert if database.is_sqlite else postgresql.insert
    with database.write() as connection:
        taken = _spend_in(connection, insert, account_id, budget, now)
    return None if taken else budget.retry_after(now)


def spend_and_count(
    database: Database, account_id: int, spending: Budget, counted: Budget, now: float
) -> tuple[int | None, int]:
    """`spend(spending)`, and how much of `counted` the account used, in one transaction."""
    insert = sqlite.insert if database.is_sqlite else postgresql.insert
    with database.write() as connection:
        taken = _spend_in(connection, insert, account_id, spending, now)
        used = _spent_in(connection, account_id, counted, now)
    return (None if taken else spending.retry_after(now)), used


def refund(database: Database, account_id: int, budget: Budget, now: float) -> None:
    """Give back one unit taken in the current window (a reservation that turned out not to cost)."""
    statement = (
        budgets.update()
        .where(
            budgets.c.account_id == account_id,
            budgets.c.scope == budget.scope,
            budgets.c.window_start == budget.window_start(now),
            budgets.c.spent > 0,
        )
        .values(spent=budgets.c.spent - 1)
    )
    with database.write() as connection:
        connection.execute(statement)


def _spent_in(connection: Connection, account_id: int, budget: Budget, now: float) -> int:
    value = connection.execute(
        select(budgets.c.spent).where(
            budgets.c.account_id == account_id,
            budgets.c.scope == budget.scope,
            budgets.c.window_start == budget.window_start(now),
        )
    ).scalar_one_or_none()
    return int(value or 0)


def spent(database: Database, account_id: int, budget: Budget, now: float) -> int:
    """How much of the budget the account has used in the current window."""
    with database.read() as connection:
        return _spent_in(connection, account_id, budget, now)


def prune_budgets(database: Database, now: float) -> int:
    """Forget the windows that are over; return how many rows went."""
    with database.write() as connection:
        gone = connection.execute(delete(budgets).where(budgets.c.window_start < now - KEPT_FOR)).rowcount
    return int(gone or 0)


class SqlBudgets:
    """The `Budgets` port on the database, at the clock's now."""

    def __init__(self, database: Database, clock: Callable[[], float]) -> None:
        self._database, self._clock = database, clock

    async def spend(self, account_id: int, budget: Budget) -> int | None:
        return await asyncio.to_thread(spend, self._database, account_id, budget, self._clock())

    async def refund(self, account_id: int, budget: Budget) -> None:
        await asyncio.to_thread(refund, self._database, account_id, budget, self._clock())

    async def spent(self, account_id: int, budget: Budget) -> int:
        return await asyncio.to_thread(spent, self._database, account_id, budget, self._clock())

    async def spend_and_count(
        self, account_id: int, spending: Budget, counted: Budget
    ) -> tuple[int | None, int]:
        return await asyncio.to_thread(
            spend_and_count, self._database, account_id, spending, counted, self._clock()
        )
