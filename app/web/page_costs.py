"""What a signed-in page costs its account, spent before the page reads anything: the pages'
side of what `app.web.api_costs` is for the API.

Each account has `PAGE_READS_PER_MINUTE` a minute in each server process, counted in bounded
memory as the API's reads are (`policies.budgets.WindowCounter`). A page costs one, but the two
that read the most cost `HEAVY_PAGE`: the report (every event of its period) and a board
filtered by attention (up to 20 pages of 500 tickets: `app.web.page_reads`). Past the budget a
page answers 429 with `Retry-After` and reads nothing, neither the record nor GitHub; a cheaper
page may still fit in what is left of the minute.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from policies.attention import CODES
from policies.budgets import Budget, WindowCounter

PAGE_READS_PER_MINUTE = 300  # per account, per process: a page every 0.2 s for a whole minute
HEAVY_PAGE = 20  # a report or an attention filter: 15 of them a minute

Cost = Callable[[Mapping[str, str]], int]  # a page's cost, from its query string


class PageCosts:
    """One process's count of every account's page reads this minute."""

    def __init__(self, per_minute: int = PAGE_READS_PER_MINUTE) -> None:
        self.reads = WindowCounter(Budget("page reads", per_minute, 60.0))

    def spend(self, account_id: int, cost: int, now: float) -> int | None:
        """Take `cost` of the account's reads: None when taken, else the seconds to wait."""
        return self.reads.spend(account_id, now, cost)


def plain(query: Mapping[str, str]) -> int:
    """A page that reads one page of the record."""
    return 1


def heavy(query: Mapping[str, str]) -> int:
    """A page that may read the whole record of a repository (the report)."""
    return HEAVY_PAGE


def board(query: Mapping[str, str]) -> int:
    """The board: heavy when filtered by an attention code (anything else is no filter)."""
    return HEAVY_PAGE if query.get("attention", "") in CODES else 1
