"""Fixed-window budgets: how many of something an account may do per window, decided purely.

A window is `[start, start + length)` with `start` a multiple of `length`, so every process
counting the same account agrees on the window without talking. Past the limit an answer says
when the window ends (the `Retry-After`), and nothing more is counted: a caller over its budget
cannot grow the count.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import TypeAlias


@dataclass(frozen=True)
class Budget:
    """`limit` uses per `window` seconds of one scope ("commands:1001", "reads", ...)."""

    scope: str
    limit: int
    window: float

    def window_start(self, now: float) -> float:
        """The first second of the window `now` falls in."""
        return math.floor(now / self.window) * self.window

    def retry_after(self, now: float) -> int:
        """Whole seconds until the window `now` falls in is over (at least 1)."""
        return max(1, math.ceil(self.window_start(now) + self.window - now))


OUTSIDERS_PER_REPOSITORY = 10  # all role-less accounts together: this many times one account's share

Repository: TypeAlias = int | str
"""Where a repository's budget counts: GitHub's repository id, which a rename or a transfer
keeps (so neither gives anyone a fresh budget, and a new repository taking the old name starts
its own); its name only where no id is known (a payload without `repository.id`). Scopes by id
spell the number and never meet a name's (every name has a `/`): rows kept under a name before
ids were used (upgrading) count for nothing, and are gone when their hour is."""


def repository_scope(repository_id: int | None, name: str) -> Repository:
    """The repository's id, or its name when no id is known (see `Repository`)."""
    return repository_id if repository_id is not None else name


def _scope(repository: Repository) -> str:
    return str(repository) if isinstance(repository, int) else repository.casefold()


def outsider_budgets(repository: Repository, limit: int) -> tuple[Budget, Budget, Budget]:
    """Requests by accounts without a role in a repository, whichever way they come (a comment,
    the API): one account's (`limits.outsider_requests_per_hour`), every such account's together
    (held by account 0), so many accounts cost no more, and the mark that the account was found
    holding no role this hour (one unit)."""
    scope = _scope(repository)
    return (
        Budget(f"outsider:{scope}", limit, 3600.0),
        Budget(f"outsiders:{scope}", limit * OUTSIDERS_PER_REPOSITORY, 3600.0),
        Budget(f"roleless:{scope}", 1, 3600.0),
    )


def role_holder_budget(repository: Repository) -> Budget:
    """The mark that the account was found holding a role in the repository this hour (one
    unit): an API command GitHub failed before the door is given back to such an account, never
    to one GitHub could not place (`app.web.api_costs.ApiCosts.held_a_role`)."""
    return Budget(f"holder:{_scope(repository)}", 1, 3600.0)


def roles_again_budget(repository: Repository) -> Budget:
    """How often an account found without a role this hour may still have its roles asked again
    once all role-less accounts' requests are spent (by strangers, perhaps): once in ten
    minutes, so one given a role since is not silenced for the rest of the hour."""
    return Budget(f"roles-again:{_scope(repository)}", 1, 600.0)


class WindowCounter:
    """One process's counts for one budget, for at most `accounts` accounts at a time.

    The least recently counted account is forgotten first: a flood of distinct accounts can
    only push others' counts out (restarting them), never grow the memory.
    """

    def __init__(self, budget: Budget, accounts: int = 10_000) -> None:
        self.budget, self._accounts = budget, accounts
        self._counts: OrderedDict[int, tuple[float, int]] = OrderedDict()

    def spend(self, account_id: int, now: float, cost: int = 1) -> int | None:
        """Take `cost` uses: None when taken, else the seconds until the window ends (nothing
        taken; a cheaper use may still fit)."""
        start = self.budget.window_start(now)
        held = self._counts.get(account_id)
        spent = held[1] if held is not None and held[0] == start else 0
        if spent + cost > self.budget.limit:
            return self.budget.retry_after(now)
        self._counts[account_id] = (start, spent + cost)
        self._counts.move_to_end(account_id)
        while len(self._counts) > self._accounts:
            self._counts.popitem(last=False)
        return None

    def __len__(self) -> int:
        return len(self._counts)


def command_budget(repository: Repository, limit: int) -> Budget:
    """An account's state-changing commands in one repository, by comment or through the API
    alike (`limits.commands_per_hour`): spent once per command, before it runs."""
    return Budget(f"commands:{_scope(repository)}", limit, 3600.0)


def status_recheck_budget(repository: Repository, number: int) -> Budget:
    """How often a `/status` may have a ticket's acceptance judged again (asking GitHub for the
    reviewer's roles): once a minute per ticket, however many accounts ask (held by account 0)."""
    return Budget(f"recheck:{_scope(repository)}#{number}", 1, 60.0)
