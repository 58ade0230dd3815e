"""What an API request may cost, decided before railyard asks GitHub anything for it with the
installation's token (SPEC *Answers that cannot be forged or jammed*: the API's costs).

- Every command spends the account's `limits.commands_per_hour` in the repository, refusals
  included (an unknown commit, an issue that does not exist, a missing role).
- An account found holding no role there also spends `limits.outsider_requests_per_hour`, and
  all such accounts together ten times that: each of their requests costs a call to learn it.
- Reads spend `API_READS_PER_MINUTE` per account; asking GitHub which installation serves a
  repository spends the account's lookups (any public repository is readable by anyone).
- Tokens GitHub refused are refused again without asking; unknown ones are checked at a bounded
  rate (`app.web.token_checks`).

Past a budget: `OverBudget` (429 with `Retry-After`), nothing called, nothing recorded. The
command and outsider budgets live in the database (shared by every process, one row per account,
scope and window, pruned by housekeeping); reads and lookups in each process's bounded memory.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from app.github.reads import rules_from
from app.runtime.adapters import Adapters
from app.store.budgets import spend, spent
from app.web.token_checks import TokenChecks
from handlers.ports import Rules
from policies.budgets import Budget, WindowCounter

READS_PER_MINUTE = 600  # per account, per process
LOOKUPS_PER_HOUR = 300  # repositories' installations asked of GitHub for one account, per process
OUTSIDERS_PER_REPOSITORY = 10  # all role-less accounts together: this many times one account's share


class OverBudget(Exception):  # noqa: N818 - it is the answer, not a failure
    """A budget is spent: the answer is 429, `retry_after` seconds."""

    def __init__(self, budget: Budget, retry_after: int, message: str | None = None) -> None:
        per = f"{int(budget.window)} s"
        super().__init__(message or f"over the budget of {budget.limit} per {per}; retry in {retry_after} s")
        self.budget, self.retry_after = budget, retry_after


class ApiCosts:
    """One process's view of every API budget."""

    def __init__(
        self,
        shell: Adapters,
        *,
        clock: Callable[[], float] = time.time,
        reads_per_minute: int = READS_PER_MINUTE,
    ) -> None:
        self._shell, self._clock = shell, clock
        self.reads = WindowCounter(Budget("reads", reads_per_minute, 60.0))
        self.lookups = WindowCounter(Budget("installation lookups", LOOKUPS_PER_HOUR, 3600.0))
        self.tokens = TokenChecks()

    async def known_rules(self, installation_id: int, repository: str) -> Rules:
        """The rules last read for the repository, however long ago: a limit is checked before
        anything is asked of GitHub (read once when this process never read them)."""
        loader = self._shell.loader
        known = loader.known(repository) if loader is not None else None
        if known is not None:
            return rules_from(known)
        return await self._shell.ports.configs.load(installation_id, repository)

    async def command(self, account_id: int, repository: str, rules: Rules) -> None:
        """Spend one of the account's commands in the repository (refusals included)."""
        budget, now = commands_budget(repository, rules), self._clock()
        retry = await asyncio.to_thread(spend, self._shell.database, account_id, budget, now)
        if retry is not None:
            raise OverBudget(budget, retry)

    async def outsider_known(self, account_id: int, repository: str, rules: Rules) -> bool:
        """Whether the account was found without a role here this hour (`OverBudget` once it,
        or all such accounts together, made its share of requests)."""
        now, known = self._clock(), False
        for holder, budget in outsider_budgets(account_id, repository, rules):
            used = await asyncio.to_thread(spent, self._shell.database, holder, budget, now)
            if used >= budget.limit:
                raise OverBudget(budget, budget.retry_after(now))
            known = known or (holder == account_id and used > 0)
        return known

    async def outsider_request(self, account_id: int, repository: str, rules: Rules) -> None:
        """The request just made was by an account holding no role in the repository."""
        now = self._clock()
        for holder, budget in outsider_budgets(account_id, repository, rules):
            await asyncio.to_thread(spend, self._shell.database, holder, budget, now)

    def read(self, account_id: int) -> None:
        """Spend one of the account's reads of the minute."""
        self._spend_in_memory(self.reads, account_id)

    def lookup(self, account_id: int) -> None:
        """Spend one of the account's installation lookups of the hour."""
        self._spend_in_memory(self.lookups, account_id)

    def new_token(self) -> None:
        """Spend one check of a token never seen accepted (shared by every caller)."""
        retry = self.tokens.spend_new(self._clock())
        if retry is not None:
            message = f"too many unknown tokens are being checked; retry in {retry} s"
            raise OverBudget(self.tokens.new.budget, retry, message)

    def _spend_in_memory(self, counter: WindowCounter, account_id: int) -> None:
        retry = counter.spend(account_id, self._clock())
        if retry is not None:
            raise OverBudget(counter.budget, retry)


def commands_budget(repository: str, rules: Rules) -> Budget:
    """An account's API commands in one repository: `limits.commands_per_hour`."""
    return Budget(f"commands:{repository.casefold()}", rules.commands_per_hour, 3600.0)


def outsider_budgets(account_id: int, repository: str, rules: Rules) -> list[tuple[int, Budget]]:
    """Requests by accounts without a role: one account's (`limits.outsider_requests_per_hour`)
    and every such account's together (held by account 0), so many accounts cost no more."""
    scope, limit = repository.casefold(), rules.outsider_requests_per_hour
    return [
        (account_id, Budget(f"outsider:{scope}", limit, 3600.0)),
        (0, Budget(f"outsiders:{scope}", limit * OUTSIDERS_PER_REPOSITORY, 3600.0)),
    ]
