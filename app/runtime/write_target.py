"""Before the outbox writes: is the effect's repository still the one its name names on GitHub?

An effect names its repository (`owner/name`) and keeps GitHub's id of it (`repository_id`,
stamped when it was enqueued). A repository can be renamed, transferred or deleted, and a new
repository can take its name, with no webhook processed since (late, or lost in an outage:
GitHub does not redeliver). Written by name, the old repository's writes would then land in
the new one: a 404 for the old status comment read as "deleted" would create it again on
the new repository's issue of that number, showing a possibly private ticket there.

So the outbox asks GitHub the id's name (`GET /repositories/{id}` with the effect's
installation; conditional, so an unchanged answer is a 304 that costs no rate limit) at most
once per installation and repository every `window` seconds in this process, and again,
whatever the window, when a write by id meets a 404 (before it creates anything anew):

- the id has the effect's name: the write goes ahead;
- the id has another name (renamed, transferred within the installation): the records follow
  it (`repositories.place`, as the `renamed` webhook will) and the write goes to that name;
  an id the records give that name to is asked its name too and moves there first, its
  writes kept (only one GitHub no longer has is retired, its writes cancelled);
- GitHub has no such id for the installation (deleted, or out of its reach): `RepositoryGone`,
  the effect fails visibly and nothing is written.

The outbox also cancels an effect whose name the records give to another id now
(`EffectLeases.hold_to_perform`); a name they give to no id (the rename committed after the
effect was enqueued) is asked whatever the window, and the effect follows its id. An effect
without an id (its name had none when enqueued: no webhook of the repository since ids are
kept) is written as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

from app.contracts.effect_types import with_earlier_key
from app.github.client import GitHubClient, GitHubError, GitHubUnavailable, NotFound
from app.store.database import Database
from app.store.hops import off_loop
from app.store.repositories import holder_of, place_before_write
from handlers.holders import Unsettled, holders_moved

log = structlog.get_logger(__name__)

KEPT_AT_MOST = 4096
"""Repositories whose name this process remembers; past that it forgets them all (and asks again)."""


class RepositoryGone(GitHubError):  # noqa: N818 - it names what GitHub answered
    """GitHub has no repository of the effect's id for its installation: nothing is written."""

    def __init__(self, repository_id: int, name: str, installation_id: int) -> None:
        super().__init__(
            404,
            f"repository {repository_id} (last known as {name}) is deleted or out of installation "
            f"{installation_id}'s reach; nothing written, the name may belong to another repository now",
        )


class NoLongerPending(Exception):  # noqa: N818 - control flow, not an error
    """The effect was cancelled (by another process) while its repository's records moved: it
    is left as it is, and nothing is written."""


@dataclass
class WriteTarget:
    """GitHub's name for each effect's repository id, asked before writes (see the module)."""

    database: Database
    github: GitHubClient
    clock: Callable[[], float] = time.time
    window: float = 30.0
    _names: dict[tuple[int, int], tuple[str, float]] = field(default_factory=dict)

    async def confirm(self, row: dict[str, Any]) -> None:
        """Before a write: the effect's repository id still has its name (asked at most once a
        window), or its records and the effect `row` moved to the id's name now."""
        await self._check(row, fresh=False)

    def forget(self, row: dict[str, Any]) -> None:
        """The records give the effect's name to no id now (the id moved away meanwhile): its
        next `confirm` asks GitHub, whatever the window."""
        if row.get("repository_id") is not None:
            self._names.pop((int(row["installation_id"]), int(row["repository_id"])), None)

    async def moved(self, row: dict[str, Any]) -> bool:
        """After a 404 for a thing addressed by name and id: ask GitHub again, whatever the
        window. True: the records (and `row`) moved to the id's new name, try there; False: the
        id still has the name, so the thing was deleted. `RepositoryGone`: the id is gone."""
        return await self._check(row, fresh=True)

    async def _check(self, row: dict[str, Any], *, fresh: bool) -> bool:
        repository_id = row.get("repository_id")
        if repository_id is None:
            return False
        key = (int(row["installation_id"]), int(repository_id))
        name = str(row["repository"]).casefold()
        known = self._names.get(key)
        if not fresh and known is not None and known[0] == name and self.clock() < known[1]:
            return False
        now_named = await self._name_on_github(row, *key)
        if len(self._names) >= KEPT_AT_MOST:
            self._names.clear()
        self._names[key] = (now_named, self.clock() + self.window)
        if now_named == name:
            return False
        log.info("the repository was renamed; its records follow it", repository=name, now=now_named)
        holders = await self._holders_moved(key[0], key[1], now_named)
        moved = await off_loop(
            place_before_write, self.database, key[1], now_named, row["id"], self.clock(), holders
        )
        if moved is None:
            raise NoLongerPending
        if moved[1] != row["dedupe_key"]:  # as `place` kept it: a create begun under it is found
            row["result"] = with_earlier_key(row.get("result"), row["dedupe_key"])
        row["repository"], row["dedupe_key"] = moved
        return True

    async def _holders_moved(self, installation_id: int, repository_id: int, name: str) -> dict[int, str]:
        """The ids whose names the move takes, and GitHub's names for them now
        (`handlers.holders.holders_moved`, one conditional read each). One GitHub no longer
        shows (404, or 403 and 451: out of the installation's reach) is left out: `place`
        retires its records and cancels its writes. A chain longer than `HOPS`, or GitHub giving
        one name to two ids (an answer from before a rename), is asked again at the effect's next
        attempt: nothing moves, no write of a repository GitHub was not asked about is cancelled."""

        async def holder(held: str) -> int | None:
            return await off_loop(holder_of, self.database, held)

        async def named(holder_id: int) -> str | None:
            try:
                found = await self._github_name(installation_id, holder_id)
            except GitHubError:  # gone or out of reach; GitHub failing (5xx, limits) is raised
                return None
            self._names[(installation_id, holder_id)] = (found, self.clock() + self.window)
            return found

        try:
            return await holders_moved(repository_id, name, holder, named)
        except Unsettled as error:
            raise GitHubUnavailable(f"{error}: asked again later", ambiguous=False) from error

    async def _name_on_github(self, row: dict[str, Any], installation_id: int, repository_id: int) -> str:
        try:
            return await self._github_name(installation_id, repository_id)
        except NotFound as error:
            raise RepositoryGone(repository_id, str(row["repository"]), installation_id) from error

    async def _github_name(self, installation_id: int, repository_id: int) -> str:
        found = await self.github.call(
            "get_repository_by_id", installation_id, repository_id=str(repository_id)
        )
        return str(found["full_name"]).casefold()
