"""The per-account budgets in the database, on SQLite and PostgreSQL: spent before any call,
never past the limit, shared by every process, forgotten once the window is over; a comment's
commands spend them as the API's do."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from sqlalchemy import func, select

from app.contracts.effect_types import surfaces_for
from app.store.budgets import SqlBudgets, budgets, prune_budgets, refund, spend, spent
from app.store.database import Database
from app.store.tables import OperationRow, table
from app.store.unit import SqlStore
from app.views.replies_text import render
from handlers.outsiders import admit, settle
from handlers.ports import Rules
from policies.budgets import Budget
from policies.model import TicketKey
from policies.states import WorkState
from tests.fakes.github import issue_answer
from tests.fakes.webhooks import REPOSITORY, comment
from tests.unit.handlers.steps import CAROL, RACHEL, world
from tests.unit.handlers.test_budgets_renamed import ID, SITE, WEB
from tests.unit.handlers.test_repositories import of, renamed

HOUR = Budget("commands:acme/web", 3, 3600.0)
T0 = 1_780_000_000.0 - 1_780_000_000.0 % 3600


def rows(database: Database) -> int:
    with database.read() as connection:
        return int(connection.execute(select(func.count()).select_from(budgets)).scalar_one())


def test_an_account_past_its_limit_is_told_when_to_retry_and_its_count_stops(database: Database) -> None:
    """Three units are taken, the rest refused with the seconds left; the count stays at the limit."""
    answers = [spend(database, 42, HOUR, T0 + n) for n in range(6)]
    assert answers[:3] == [None, None, None] and answers[3:] == [3597, 3596, 3595]
    assert spent(database, 42, HOUR, T0 + 10) == 3 and rows(database) == 1
    assert spend(database, 43, HOUR, T0) is None  # another account's budget is its own
    assert spend(database, 42, HOUR, T0 + 3600) is None  # the next hour


def test_racing_requests_never_take_more_than_the_limit(database: Database) -> None:
    """Twenty requests at once by one account: exactly the limit's worth are taken."""
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: spend(database, 42, HOUR, T0), range(20)))
    assert answers.count(None) == 3 and spent(database, 42, HOUR, T0) == 3


def test_windows_that_are_over_are_pruned(database: Database) -> None:
    """Housekeeping drops rows of windows more than two hours old; the current ones stay."""
    spend(database, 42, HOUR, T0)
    spend(database, 42, HOUR, T0 + 3 * 3600)
    assert prune_budgets(database, T0 + 3 * 3600 + 1) == 1
    assert spent(database, 42, HOUR, T0 + 3 * 3600) == 1


def test_a_refunded_reservation_can_be_taken_again_and_the_count_never_goes_below_zero(
    database: Database,
) -> None:
    """A unit given back is free again; giving back what was never taken changes nothing."""
    assert [spend(database, 42, HOUR, T0) for _ in range(3)] == [None] * 3
    refund(database, 42, HOUR, T0)
    assert spend(database, 42, HOUR, T0) is None and spend(database, 42, HOUR, T0) is not None
    refund(database, 43, HOUR, T0)  # no row: nothing to give back
    for _ in range(5):
        refund(database, 42, HOUR, T0)
    assert spent(database, 42, HOUR, T0) == 0 and spent(database, 43, HOUR, T0) == 0


MARK = Budget("roleless:acme/web", 1, 3600.0)


async def test_spending_one_budget_reads_another_as_two_statements_would(database: Database) -> None:
    """`spend_and_count` (one statement on PostgreSQL, two on SQLite): the spend is refused past
    the limit with the seconds left, and the other budget's count is read as it stands."""
    clock = iter([T0, T0 + 1, T0 + 2, T0 + 3, T0 + 4])
    sql = SqlBudgets(database, lambda: next(clock))
    assert await sql.spend_and_count(42, HOUR, MARK) == (None, 0)
    spend(database, 42, MARK, T0)
    assert await sql.spend_and_count(42, HOUR, MARK) == (None, 1)
    assert await sql.spend_and_count(42, HOUR, MARK) == (None, 1)
    assert await sql.spend_and_count(42, HOUR, MARK) == (3597, 1)  # the fourth: refused, counted on
    assert await sql.spend_and_count(43, HOUR, MARK) == (None, 0)  # another account's are its own
    assert spent(database, 42, HOUR, T0) == 3 and spent(database, 43, HOUR, T0) == 1


async def test_racing_spends_and_counts_never_take_more_than_the_limit(database: Database) -> None:
    """Twenty at once by one account, through the event loop's statements: exactly three taken."""
    sql = SqlBudgets(database, lambda: T0)
    answers = await asyncio.gather(*(sql.spend_and_count(42, HOUR, MARK) for _ in range(20)))
    assert [retry for retry, _ in answers].count(None) == 3 and spent(database, 42, HOUR, T0) == 3


async def test_comments_on_eight_tickets_at_once_run_no_more_commands_than_the_budget(
    database: Database,
) -> None:
    """`limits.commands_per_hour: 2`: eight `/draft` comments by one account on eight issues,
    handled at the same time (as the worker's concurrency and several workers do), draft two
    tickets; the others are refused as over the budget, not run on a count read too early."""
    ports = world(Rules("blob-sha-1", commands_per_hour=2))
    store = SqlStore(database, render=render, surfaces=surfaces_for, clock=ports.clock)
    services = replace(ports.services, store=store, budgets=SqlBudgets(database, ports.clock))
    numbers = range(101, 109)
    for number in numbers:
        ports.github.add_issue(REPOSITORY, issue_answer(number))
    try:
        await asyncio.gather(
            *(
                ports.dispatch("issue_comment", comment(n, "/draft", comment_id=9000 + n), services=services)
                for n in numbers
            )
        )
        async with store.read() as reads:
            drafted = [n for n in numbers if await reads.ticket(TicketKey(REPOSITORY, n)) is not None]
    finally:
        store.close()
    with database.read() as connection:
        operations = connection.execute(table(OperationRow).select()).mappings().all()
    assert len(drafted) == 2, drafted
    assert (
        sorted(str(op["refusal_code"]) for op in operations if op["outcome"] == "refused")
        == ["over_budget"] * 6
    )


async def test_an_account_found_role_less_is_admitted_again_once_in_ten_minutes_when_strangers_spent_the_rest(
    database: Database,
) -> None:
    """Account 7 is found without a role (its roles asked in full: the ten minutes start);
    strangers spend every role-less request of the hour. Within those ten minutes 7 is not
    admitted; past them, once, for a role check in full (it may hold a role now), and not a
    second time in the next ten minutes."""
    now = [T0]
    sql = SqlBudgets(database, lambda: now[0])
    first = await admit(sql, 7, "acme/web", 3)
    await settle(sql, 7, "acme/web", 3, first, roleless=True)
    for stranger in range(100, 120):
        for _ in range(3):
            admission = await admit(sql, stranger, "acme/web", 3)
            if admission.over is None:
                await settle(sql, stranger, "acme/web", 3, admission, roleless=True)
    assert (await admit(sql, 7, "acme/web", 3)).over is not None
    now[0] += 600
    again = await admit(sql, 7, "acme/web", 3)
    assert (again.known, again.over, again.outsider) == (True, None, False)
    await settle(sql, 7, "acme/web", 3, again, roleless=True)
    assert (await admit(sql, 7, "acme/web", 3)).over is not None


async def test_a_known_role_less_account_is_asked_as_a_stranger_between_its_checks_in_full(
    database: Database,
) -> None:
    """Account 7, found without a role, keeps sending commands: within ten minutes of its last
    check in full its roles are asked as a stranger's (no team read), then once in full again."""
    now = [T0]
    sql = SqlBudgets(database, lambda: now[0])
    first = await admit(sql, 7, "acme/web", 30)
    assert not first.outsider
    await settle(sql, 7, "acme/web", 30, first, roleless=True)
    later = await admit(sql, 7, "acme/web", 30)
    assert (later.known, later.outsider) == (True, True)
    await settle(sql, 7, "acme/web", 30, later, roleless=True)
    now[0] += 600
    assert not (await admit(sql, 7, "acme/web", 30)).outsider


async def test_a_rename_gives_no_one_a_fresh_command_budget_in_the_database(database: Database) -> None:
    """`limits.commands_per_hour: 2`, in the database: carol claims and gives up #12 of GitHub's
    repository 4242, called acme/web; its `renamed` webhook (now acme/site) moves the ticket, and
    her `/claim` there is refused over the budget she spent under the old name."""
    ports = world(Rules("blob-sha-1", commands_per_hour=2))
    store = SqlStore(database, render=render, surfaces=surfaces_for, clock=ports.clock)
    services = replace(ports.services, store=store, budgets=SqlBudgets(database, ports.clock))
    for name in (WEB, SITE):
        ports.github.add_issue(name, issue_answer(12, assignees=(RACHEL,)))
    ports.github.names[ID] = SITE

    async def say(body: str, by: tuple[str, int], name: str = WEB) -> None:
        payload = of(ID, comment(12, body, author=by, repository=name), name)
        await ports.dispatch("issue_comment", payload, services=services)

    try:
        await say("/publish", RACHEL)
        await say("/claim", CAROL)
        await say("/reopen Giving it up", CAROL)
        await ports.dispatch("repository", renamed(ID, WEB, SITE), services=services)
        await say("/claim", CAROL, SITE)
        async with store.read() as reads:
            moved = await reads.ticket(TicketKey(SITE, 12))
    finally:
        store.close()
    assert moved is not None and moved.work is WorkState.OPEN
    with database.read() as connection:
        operations = connection.execute(table(OperationRow).select()).mappings().all()
    assert [(op["repository"], op["refusal_code"]) for op in operations if op["outcome"] == "refused"] == [
        (SITE, "over_budget")
    ]
