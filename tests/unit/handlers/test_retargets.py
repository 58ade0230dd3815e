"""A pull request retargeted to another base (`edited` with `changes.base`): its mergeability is
read again, and an answer about the old base no longer counts."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from handlers.errors import TransientError
from policies.states import IntegrationState
from tests.fakes.github import pull_answer
from tests.fakes.ports import FakePorts
from tests.fakes.webhooks import REPOSITORY, pull_request, push
from tests.unit.handlers.steps import published, ticket, world

HEAD, OLD_BASE_HEAD = "a" * 40, "b" * 40
RETARGETED_AT = "2026-11-30T10:20:00Z"


async def opened_into_main(mergeable: bool) -> tuple[FakePorts, dict[str, Any]]:
    """Ticket #12 published; PR #40 (`Fixes #12`) opened into `main`, GitHub answering `mergeable`."""
    ports = world()
    await published(ports)
    pull = ports.github.add_pull(
        REPOSITORY, pull_answer(REPOSITORY, 40, body="Fixes #12", head_sha=HEAD, mergeable=mergeable)
    )
    await ports.dispatch("pull_request", pull_request("opened", pull), delivery_id="o")
    return ports, pull


def retargeted(pull: dict[str, Any], base: str, mergeable: bool | None) -> dict[str, Any]:
    """The `edited` payload of `pull` retargeted from `main` to `base` (GitHub answering
    `mergeable` from now on)."""
    answer = {**pull, "base": {"ref": base}, "mergeable": mergeable, "updated_at": RETARGETED_AT}
    payload = pull_request("edited", answer)
    payload["changes"] = {"base": {"ref": {"from": "main"}, "sha": {"from": OLD_BASE_HEAD}}}
    return payload


async def retarget(ports: FakePorts, pull: dict[str, Any], base: str, mergeable: bool | None) -> None:
    """Retarget PR #40 to `base`; GitHub serves the PR with its new base."""
    payload = retargeted(pull, base, mergeable)
    ports.github.add_pull(REPOSITORY, payload["pull_request"])
    await ports.dispatch("pull_request", payload, delivery_id="e")


async def test_a_pull_request_retargeted_to_a_base_it_merges_into_is_no_longer_blocked() -> None:
    """#40 conflicts with `main` (blocked); retargeted to `release-1`, where it merges: open."""
    ports, pull = await opened_into_main(mergeable=False)
    assert ticket(ports).rails.integration is IntegrationState.BLOCKED
    await retarget(ports, pull, "release-1", mergeable=True)
    rails = ticket(ports).rails
    assert rails.integration is IntegrationState.PULL_REQUEST_OPEN
    assert rails.pull_requests[40].base_ref == "release-1"


async def test_a_clean_pull_request_retargeted_onto_a_conflicting_base_is_blocked() -> None:
    """#40 merges into `main` (open); retargeted to `release-1`, GitHub first answers `null` (the
    delivery is retried, as after a push), then `false`: blocked."""
    ports, pull = await opened_into_main(mergeable=True)
    ports.clock.now = datetime(2026, 11, 30, 10, 20, 30, tzinfo=UTC).timestamp()  # right after
    with pytest.raises(TransientError):
        await retarget(ports, pull, "release-1", mergeable=None)
    await retarget(ports, pull, "release-1", mergeable=False)
    assert ticket(ports).rails.integration is IntegrationState.BLOCKED


async def test_an_edit_of_the_body_alone_reads_no_mergeability() -> None:
    """Only a new base (or head) costs a pull read: editing the title or body does not."""
    ports, pull = await opened_into_main(mergeable=True)
    before = len([call for call in ports.github.calls if call.method == "pull"])
    edited = {**pull, "title": "Better words", "updated_at": RETARGETED_AT}
    await ports.dispatch("pull_request", pull_request("edited", edited), delivery_id="e")
    assert len([call for call in ports.github.calls if call.method == "pull"]) == before


async def test_a_push_to_the_new_base_is_answered_for_the_new_base() -> None:
    """After the retarget to `release-1` (clean), a push to `release-1` that makes #40 conflict
    blocks it: the base-moves answer is keyed by the base the PR targets now."""
    ports, pull = await opened_into_main(mergeable=True)
    await retarget(ports, pull, "release-1", mergeable=True)
    ports.github.add_branch(REPOSITORY, "release-1", "c" * 40)
    ports.github.add_pull(REPOSITORY, {**ports.github.pulls[(REPOSITORY, "40")], "mergeable": False})
    await ports.dispatch("push", push("release-1", head="c" * 40), delivery_id="p")
    assert ticket(ports).rails.integration is IntegrationState.BLOCKED


async def test_a_push_to_the_head_after_the_retarget_is_answered_for_the_new_base() -> None:
    """After the retarget, a push to #40's own branch whose answer is a conflict blocks it."""
    ports, pull = await opened_into_main(mergeable=True)
    await retarget(ports, pull, "release-1", mergeable=True)
    ports.github.add_branch(REPOSITORY, "feature", HEAD)
    ports.github.add_pull(REPOSITORY, {**ports.github.pulls[(REPOSITORY, "40")], "mergeable": False})
    await ports.dispatch("push", push("feature", head=HEAD, pushed_at=1_800_000_200), delivery_id="p")
    assert ticket(ports).rails.integration is IntegrationState.BLOCKED
