"""The ids whose names one repository's move takes: GitHub may have passed names along a chain
(acme/x became acme/y, acme/site became acme/x, acme/web became acme/site) or swapped them,
with no webhook seen yet. Before an id moves into a name, the id the records give that name to
is asked its name now, then the one holding that name, and so on, so every one of them moves
where GitHub says it is, its writes kept. The records and GitHub are asked through the
functions given (the outbox's `WriteTarget`, the webhook guard), so it lives with the handlers,
not in the pure core."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

HOPS = 4
"""Ids whose names one move may pass along; a longer chain is asked again later."""


class Unsettled(Exception):  # noqa: N818 - it names the situation, not a fault
    """The chain cannot be settled now (longer than `HOPS`, or GitHub giving one name to two
    ids: an answer from before a rename): nothing should move, ask again later."""


async def holders_moved(
    repository_id: int,
    name: str,
    holder_of: Callable[[str], Awaitable[int | None]],
    name_of: Callable[[int], Awaitable[str | None]],
) -> dict[int, str]:
    """GitHub's names now (casefolded) for the ids whose names moving `repository_id` to `name`
    takes: the id the records give `name` to (`holder_of`), then the one holding its new name,
    and so on (a swap ends at `repository_id`), at most `HOPS`, one `name_of` each. One GitHub
    no longer shows (`name_of` gives None: gone or out of reach) is left out: placing retires
    its records. `Unsettled` for a chain longer than `HOPS` or a name GitHub gives to two ids."""
    taken = {repository_id: name.casefold()}
    name = name.casefold()
    for _ in range(HOPS):
        holder = await holder_of(name)
        if holder is None or holder in taken:
            break
        found = await name_of(holder)
        if found is None:
            break
        name = found.casefold()
        if name in taken.values():
            raise Unsettled(f"GitHub gives {name} to repository {holder} and to another one")
        taken[holder] = name
    else:
        holder = await holder_of(name)
        if holder is not None and holder not in taken:
            raise Unsettled(f"more than {HOPS} repositories passed their names on unseen")
    del taken[repository_id]
    return taken
