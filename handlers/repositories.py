"""Repository identity: every delivery naming a repository is matched by GitHub's id first.

Records are kept under the repository's name, and a name belongs to one repository id
(`Reads.repository_at` / `repository_named`). Before any handler runs (`identified`, the
router's guard):

- the id is known under this name: go on (one read by primary key, a statement of its own);
- the id is new: if another repository held the name (the name reused), that one's records
  go to its name now, as GitHub says (`GET /repositories/{id}`), or away where no name can
  reach them; then the name is this id's, and the handlers run on a clean slate;
- the id is known under another name: GitHub is asked the id's name now (and, if another id
  holds that name, that one's name now, and so on along names swapped or passed along: all of
  them are placed together first, writes kept, `_make_room`); the records move
  there (a rename or transfer whose event has not arrived yet), the tickets and writes to the
  delivery's installation (a transfer may bring another one). A delivery naming an old name
  (written before the rename, delivered after it) is the same repository's: it runs under the
  name now, as GitHub would send it now (`_as_named_now`), so it acts on the id's records only,
  never on those of a repository that took the old name since. It is dropped only when GitHub
  no longer knows the id, or no installation of the app reaches the repository now.

`repository` `renamed` and `transferred` events need nothing more than this guard.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import structlog

from handlers.comments import answered
from handlers.errors import Missing, TransientError
from handlers.holders import Unsettled, holders_moved
from handlers.payloads import dig, dig_int, dig_str
from handlers.ports import Services
from handlers.routing import Router, WebhookEvent
from policies.parser import parse_comment

log = structlog.get_logger(__name__)
router = Router()


DECIDED_BY_NAME = frozenset(
    {
        "issue_comment", "issues", "pull_request", "deployment_protection_rule", "deployment",
        "deployment_status", "merge_group", "push",
    }
)  # fmt: skip
"""Events whose handlers judge by the repository's name (its `.github/railyard.yml`, who holds
which role there): commands, labels, a PR's links by a runner, a deployment's gate and its
environments, a merge queue's check, a push's branch patterns. For these (a comment only when
railyard answers it) the guard asks GitHub the id's name even when the records give it the
delivery's name (a conditional read: free while unchanged), so a delivery written before a
rename nobody has told railyard about is never judged by the rules of a repository that took
the name since. A check's events are many and most concern no ticket: their handler asks
(`still_named`) only before it records one on a ticket."""


def _judged_by_name(event: WebhookEvent) -> bool:
    if event.event not in DECIDED_BY_NAME or event.installation_id is None:
        return False
    if event.event == "issue_comment":
        return event.action == "created" and answered(
            parse_comment(dig_str(event.payload, "comment", "body") or "")
        )
    return True


async def identified(event: WebhookEvent, services: Services) -> WebhookEvent | None:
    """The delivery, once its repository's records are under its name; None to drop it."""
    repository_id = dig_int(event.payload, "repository", "id")
    name = dig_str(event.payload, "repository", "full_name")
    if repository_id is None or name is None:
        return event  # an installation's or the app's own event: no one repository
    if await services.store.repository_at(repository_id) == name.casefold():
        if not _judged_by_name(event):
            return event  # the usual case: one statement, no transaction
        asked = await _name_now(services, event, repository_id)
        if asked is not None and asked.casefold() == name.casefold():
            return event  # GitHub agrees: the name is still this id's
        if asked is not None:
            log.info("renamed, unseen: handled under the name GitHub gives it", repository_id=repository_id)
        services.configs.forget(name)  # rules read for the name may be another repository's now
        return await _follow(services, event, repository_id, name.casefold(), asked)
    async with services.store.read() as reads:  # both names read in one snapshot
        current = await reads.repository_at(repository_id)
        holder = None if current == name.casefold() else await reads.repository_named(name)
    if current == name.casefold():
        return event
    services.configs.forget(name)  # rules read for the name may be another repository's
    if current is None:
        if holder is not None:
            await _make_room(services, event, repository_id, name, placed=False)
        created = _created_at(dig(event.payload, "repository", "created_at"))
        await _place(services, repository_id, name, created, event.installation_id)
        return event
    return await _follow(
        services, event, repository_id, current, await _name_now(services, event, repository_id)
    )


async def still_named(event: WebhookEvent, services: Services) -> bool:
    """Before a handler records what `event` says on tickets under the repository's name: True
    when GitHub still gives the delivery's repository id that name. Renamed since (no webhook
    said so yet): the records follow the id and the delivery is tried again, under the name now
    (`TransientError`); False when GitHub no longer knows the id (the delivery is dropped)."""
    repository_id = dig_int(event.payload, "repository", "id")
    name = dig_str(event.payload, "repository", "full_name")
    if repository_id is None or name is None or event.installation_id is None:
        return True
    asked = await _name_now(services, event, repository_id)
    if asked is not None and asked.casefold() == name.casefold():
        return True
    services.configs.forget(name)
    if await _follow(services, event, repository_id, name.casefold(), asked) is None:
        return False
    raise TransientError(
        "the repository was renamed since the delivery was sent: it runs again under its name now"
    )


async def _follow(
    services: Services, event: WebhookEvent, repository_id: int, current: str, asked: str | None
) -> WebhookEvent | None:
    """The records of `repository_id` (under `current`) and the delivery follow the name GitHub
    gives the id now (`asked`, or asked where its records are kept); None: GitHub no longer knows
    the id, or no installation reaches it (the delivery is dropped)."""
    name = dig_str(event.payload, "repository", "full_name") or ""
    now = asked or await _name_where_kept(services, event, repository_id, current)
    if now is None:
        log.warning("dropped: GitHub does not know the repository", repository_id=repository_id)
        return None
    services.configs.forget(current)
    if now.casefold() != name.casefold():
        renamed = await _as_named_now(services, event, repository_id, now)
        if renamed is None:
            log.warning("dropped: no installation reaches the repository now", repository_id=repository_id)
            return None
        log.info("renamed since it was sent: handled under its name now", repository_id=repository_id)
        event = renamed
    await _make_room(services, event, repository_id, now, placed=True)  # taken from another id?
    created = _created_at(dig(event.payload, "repository", "created_at"))
    await _place(services, repository_id, now, created, event.installation_id)
    return event


async def _as_named_now(
    services: Services, event: WebhookEvent, repository_id: int, now: str
) -> WebhookEvent | None:
    """`event`, of the repository `repository_id` when it had another name, as GitHub would send it
    now: every repository object of that id in it (the repository, a PR's head or base) named
    `now`, and a protection rule's callback URL (`_callback_named`); after a transfer to another
    owner, through that owner's installation of the app (the delivery's may be gone), None when
    there is none."""
    installation_id = event.installation_id
    before = dig_str(event.payload, "repository", "full_name") or ""
    if before.partition("/")[0].casefold() != now.partition("/")[0].casefold():
        try:
            installation_id = await services.github.installation_of(now)
        except Missing:
            return None
    payload = _named(event.payload, repository_id, now)
    callback = payload.get("deployment_callback_url") if isinstance(payload, dict) else None
    if isinstance(callback, str):  # a protection rule's run is answered under the name now too
        payload["deployment_callback_url"] = _callback_named(callback, before, now)
    return replace(event, payload=payload, installation_id=installation_id)


def _callback_named(url: str, before: str, now: str) -> str:
    """A protection rule's callback URL naming the repository `before` as GitHub would give it
    now, under `now` (`handlers.gate` answers only a callback of the delivery's repository);
    any other URL as it is."""
    parts = urlsplit(url)
    named = f"/repos/{before}/"
    at = parts.path.casefold().find(named.casefold())  # after an Enterprise Server's /api/v3
    if not before or at < 0:
        return url
    path = f"{parts.path[:at]}/repos/{now}/{parts.path[at + len(named) :]}"
    return urlunsplit(parts._replace(path=path))


def _named(value: Any, repository_id: int, now: str) -> Any:
    """`value` (a payload, or a part of one) with every repository object of the id named `now`."""
    if isinstance(value, list):
        return [_named(item, repository_id, now) for item in value]
    if not isinstance(value, dict):
        return value
    found = {key: _named(item, repository_id, now) for key, item in value.items()}
    if found.get("id") == repository_id and "full_name" in found:
        owner, _, short = now.partition("/")
        found |= {"full_name": now, "name": short}
        if isinstance(found.get("owner"), dict):
            found["owner"] = {**found["owner"], "login": owner}
    return found


async def _make_room(
    services: Services, event: WebhookEvent, repository_id: int, name: str, *, placed: bool
) -> None:
    """Before `repository_id` takes `name`: the id the records give that name to goes where GitHub
    says it is now, then the one holding that name, and so on (names swapped or passed along,
    unseen; `handlers.holders`), all placed together with `repository_id` if it has records
    (`placed`: a swap steps it aside first), writes kept. One GitHub
    no longer has is left out: placing retires it. A chain too long to follow, or GitHub giving
    one name to two ids, is a `TransientError`: nothing moves, the delivery is tried again."""

    async def holder_of(held: str) -> int | None:
        async with services.store.read() as reads:
            return await reads.repository_named(held)

    async def name_of(holder: int) -> str | None:
        return await _name_now(services, event, holder)

    try:
        holders = await holders_moved(repository_id, name, holder_of, name_of)
    except Unsettled as error:
        raise TransientError(f"names passed along unseen: {error}") from error
    if holders:
        names = {**holders, repository_id: name} if placed else holders
        async with services.store.unit() as uow:
            await uow.place_repositories(names, services.clock())
            await uow.commit()


async def _name_now(services: Services, event: WebhookEvent, repository_id: int) -> str | None:
    if event.installation_id is None:
        return None
    try:
        return await services.github.repository_name(event.installation_id, repository_id)
    except Missing:
        return None


async def _name_where_kept(
    services: Services, event: WebhookEvent, repository_id: int, kept: str
) -> str | None:
    """The repository's name now, asked through the app's installation on the owner its records
    are kept under (`kept`), when that is not the delivery's owner: a delivery sent before a
    transfer whose `transferred` event moved the records arrives through the old owner's
    installation, which no longer reaches the repository (GitHub answers it 404)."""
    sent_as = dig_str(event.payload, "repository", "full_name") or ""
    if kept.partition("/")[0] == sent_as.partition("/")[0].casefold():
        return None
    try:
        return await services.github.repository_name(
            await services.github.installation_of(kept), repository_id
        )
    except Missing:
        return None


async def _place(
    services: Services, repository_id: int, name: str, created_at: float | None, installation_id: int | None
) -> None:
    async with services.store.unit() as uow:
        await uow.place_repository(repository_id, name, created_at, services.clock(), installation_id)
        await uow.commit()


def _created_at(value: object) -> float | None:
    """`repository.created_at`: an ISO time, or epoch seconds in `push` payloads."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


@router.register("repository", "renamed", "transferred")
async def on_repository_moved(event: WebhookEvent, services: Services) -> None:
    """The records already follow the id (the guard moved them); the old name's rules are forgotten."""
    old_name = dig_str(event.payload, "changes", "repository", "name", "from")
    old_owner = dig_str(event.payload, "changes", "owner", "from", "user", "login") or dig_str(
        event.payload, "changes", "owner", "from", "organization", "login"
    )
    name = dig_str(event.payload, "repository", "full_name") or ""
    owner, _, short = name.partition("/")
    services.configs.forget(f"{old_owner or owner}/{old_name or short}")
    log.info("repository moved", repository=name, repository_id=dig_int(event.payload, "repository", "id"))


__all__ = ["identified", "router", "still_named"]
