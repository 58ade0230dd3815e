"""What an API request may cost, decided before railyard asks GitHub anything for it with the
installation's token (SPEC *Answers that cannot be forged or jammed*: the API's costs).

- Every command spends the account's `limits.commands_per_hour` in the repository, refusals
  included (an unknown commit, an issue that does not exist, a missing role).
- Every command reserves one of the account's `limits.outsider_requests_per_hour` before its
  roles are asked (so concurrent requests cannot each get a role check), given back when it
  holds a role. An account found holding no role (this hour) also spends, with every such
  account, ten times that, checked before its roles are asked only once it is known role-less:
  strangers spending the shared budget never refuse a caller who holds a role.
- Reads spend `API_READS_PER_MINUTE` per account; asking GitHub which installation serves a
  repository spends the account's lookups (any public repository is readable by anyone).
- Tokens GitHub refused are refused again without asking; unknown ones are checked at a bounded
  rate per caller's address, tokens seen accepted never wait on it (`app.web.token_checks`).

Past a budget: `OverBudget` (429 with `Retry-After`), nothing called, nothing recorded. The
command and outsider budgets live in the database (shared by every process, one row per account,
scope and window, pruned by housekeeping), counted per repository by GitHub's repository id, so a
rename or a transfer gives no one a fresh budget; reads and lookups in each process's bounded
memory, per account.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from app.github.reads import rules_from
from app.runtime.adapters import Adapters
from app.store.budgets import refund, spend
from app.store.hops import off_loop
from app.web.token_checks import TokenChecks
from handlers.outsiders import Admission, admit, settle
from handlers.ports import Rules
from policies.budgets import Budget, WindowCounter, command_budget, role_holder_budget

READS_PER_MINUTE = 600  # per account, per process
LOOKUPS_PER_HOUR = 300  # repositories' installations asked of GitHub for one account, per process


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
        self._budgets = shell.ports.budgets  # built once, in app.bootstrap

    async def known_rules(self, installation_id: int, repository: str) -> Rules:
        """The rules last read for the repository, however long ago: a limit is checked before
        anything is asked of GitHub (read once when this process never read them)."""
        loader = self._shell.loader
        known = loader.known(repository) if loader is not None else None
        if known is not None:
            return rules_from(known)
        return await self._shell.ports.configs.load(installation_id, repository)

    async def command(self, account_id: int, repository_id: int, rules: Rules) -> Budget:
        """Spend one of the account's commands in the repository (GitHub's id: a rename or a
        transfer restarts no budget), refusals included; the budget spent."""
        budget, now = command_budget(repository_id, rules.commands_per_hour), self._clock()
        retry = await off_loop(spend, self._shell.database, account_id, budget, now)
        if retry is not None:
            raise OverBudget(budget, retry)
        return budget

    async def held_a_role(self, account_id: int, repository_id: int) -> bool:
        """Whether the account was found holding a role in the repository this hour."""
        return await self._budgets.spent(account_id, role_holder_budget(repository_id)) > 0

    async def command_back(self, account_id: int, budget: Budget) -> None:
        """Give back a command that did not run (GitHub could not answer before the door, 503): a
        retry with the same key is not charged again, as a comment's retried delivery is not."""
        await off_loop(refund, self._shell.database, account_id, budget, self._clock())

    async def outsider_reserve(self, account_id: int, repository_id: int, rules: Rules) -> Admission:
        """Reserve one of the account's role-less requests before its roles are asked of GitHub
        (`handlers.outsiders`); `known`: it was already found without a role here this hour.
        `OverBudget` when its share, or (known role-less) all such accounts' share and its own
        re-check, is spent."""
        limit = rules.outsider_requests_per_hour
        admission = await admit(self._budgets, account_id, repository_id, limit)
        if admission.over is not None:
            raise OverBudget(admission.over, admission.retry_after)
        return admission

    async def outsider_settled(
        self,
        account_id: int,
        repository_id: int,
        rules: Rules,
        admission: Admission,
        roleless: bool | None,
        *,
        asked: bool = False,
    ) -> None:
        """After the request: `roleless` as the role check found (None: not known); `asked`:
        GitHub was asked for it all the same (and failed), so the request stays spent."""
        limit = rules.outsider_requests_per_hour
        await settle(self._budgets, account_id, repository_id, limit, admission, roleless, asked=asked)

    def read(self, account_id: int) -> None:
        """Spend one of the account's reads of the minute."""
        self._spend_in_memory(self.reads, account_id)

    def lookup(self, account_id: int) -> None:
        """Spend one of the account's installation lookups of the hour."""
        self._spend_in_memory(self.lookups, account_id)

    def new_token(self, address: str | None) -> None:
        """Spend one check of a token never seen accepted, from the caller's address."""
        retry = self.tokens.spend_new(address, self._clock())
        if retry is not None:
            message = f"too many unknown tokens from your address are being checked; retry in {retry} s"
            raise OverBudget(self.tokens.new.budget, retry, message)

    def _spend_in_memory(self, counter: WindowCounter, account_id: int) -> None:
        retry = counter.spend(account_id, self._clock())
        if retry is not None:
            raise OverBudget(counter.budget, retry)
