"""Which repository an API call may touch: the caller's token reads it, the app is installed on
it, and railyard's records under its name are GitHub's repository of that name now."""

from __future__ import annotations

import re
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from aiohttp import web

from app.github.client import NotFound
from app.github.users import Account, UserReads
from app.runtime.adapters import Adapters
from app.web.api_costs import ApiCosts
from app.web.api_refused import Refused
from handlers.errors import Missing
from handlers.payloads import dig_int, dig_time

INSTALLATION_TTL = (
    300.0  # seconds an installation id (or its absence) is trusted before GitHub is asked again
)
INSTALLATIONS_KEPT = 10_000
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")


class ApiRepositories:
    """The repository checks of the API's routes, over one process's adapters."""

    def __init__(
        self, shell: Adapters, users: UserReads, costs: ApiCosts, clock: Callable[[], float] = time.time
    ) -> None:
        self._shell, self._users, self.costs, self._clock = shell, users, costs, clock
        self._installations: OrderedDict[str, tuple[int | None, float]] = OrderedDict()

    async def visible(self, request: web.Request, token: str, account: Account) -> tuple[str, int, Any]:
        """The repository, its installation and GitHub's answer about it, when the token can read
        it and the app is installed on it."""
        owner, name = request.match_info["owner"], request.match_info["repo"]
        missing = no_repository(request)
        if not all(_NAME.fullmatch(part) and part not in (".", "..") for part in (owner, name)):
            raise missing  # GitHub's names: letters, digits, `-`, `_`, `.`; never `.` or `..`
        repository = f"{owner}/{name}"
        # The installation first (asked at most every few minutes per name, within the account's
        # lookups): the caller's token is asked only about a repository railyard serves, so naming
        # one that is not keeps nothing of it in the shared HTTP cache, whose oldest entries (the
        # installation's own conditional reads among them) such answers would push out.
        installation_id = await self._installation(repository, account)
        if installation_id is None:
            raise missing
        readable, answer = await self._users.visible(token, repository)
        if readable is False:
            raise missing
        if readable is None:  # GitHub would not answer for the token: ask as the app
            readable, answer = await self._readable_by_app(installation_id, repository, account)
        if not readable:
            raise missing
        return repository, installation_id, answer

    async def ours(self, repository: str, answer: Any) -> bool:
        """Whether railyard's records under the name are the repository GitHub now calls that
        (SPEC: a reused name shows nothing of the old repository's tickets). A name and an id
        railyard has never seen become each other's, as a first webhook would make them (it
        adopts only tickets from before ids that are younger than the repository)."""
        repository_id = dig_int(answer, "id")
        created = dig_time(answer, "created_at")
        if repository_id is None:
            return False
        async with self._shell.store.read() as reads:
            holder = await reads.repository_named(repository)
            known_as = await reads.repository_at(repository_id) if holder is None else None
        if holder is None and known_as is None and created is not None:
            async with self._shell.store.unit() as uow:
                await uow.place_repository(
                    repository_id, repository, created.timestamp(), self._clock(), None
                )
                await uow.commit()
            return True
        return holder is not None and holder == repository_id

    async def _readable_by_app(
        self, installation_id: int, repository: str, account: Account
    ) -> tuple[bool, Any]:
        """Readable as the app sees it: a public repository, or a private one where GitHub gives
        the account a permission (the collaborator permission counts teams and the organization);
        and GitHub's id of the repository."""
        github = self._shell.github
        assert github is not None  # the API is served only with app credentials
        found = await github.call("get_repository", installation_id, repository=repository)
        if isinstance(found, dict) and found.get("private") is False:
            return True, found
        try:
            permission = await github.call(
                "get_permission", installation_id, repository=repository, username=account.login
            )
        except NotFound:
            return False, found
        granted = isinstance(permission, dict) and permission.get("permission") not in (None, "none")
        return granted, found

    async def _installation(self, repository: str, account: Account) -> int | None:
        """The app's installation on the repository, or None (GitHub asked at most every few
        minutes per repository, misses too; the memory is bounded). Each question asked of
        GitHub spends the account's lookups: any public repository's name is readable, and an
        account must not spend the app's own rate limit by naming one after another."""
        now, slot = self._clock(), repository.casefold()
        cached = self._installations.get(slot)
        if cached is not None and cached[1] > now:
            return cached[0]
        self.costs.lookup(account.id)
        try:
            installation_id: int | None = await self._shell.ports.github.installation_of(repository)
        except Missing:
            installation_id = None
        self._installations[slot] = (installation_id, now + INSTALLATION_TTL)
        self._installations.move_to_end(slot)
        while len(self._installations) > INSTALLATIONS_KEPT:
            self._installations.popitem(last=False)
        return installation_id


def no_repository(request: web.Request) -> Refused:
    """404 for the repository the path names, the same whether it exists or not."""
    owner, name = request.match_info["owner"], request.match_info["repo"]
    return Refused(404, "no_such_repository", f"no repository {owner}/{name} that railyard serves to you")
