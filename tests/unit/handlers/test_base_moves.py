"""The base moves: a push to the branch open linked PRs target re-reads their mergeability."""

from __future__ import annotations

import pytest

from handlers.base_moves import MAX_PULLS_PER_PUSH, REREAD_WINDOW
from handlers.errors import TransientError
from policies.states import IntegrationState
from tests.fakes.github import pull_answer
from tests.fakes.ports import FakePorts
from tests.fakes.webhooks import REPOSITORY, pull_request, push
from tests.unit.handlers.steps import claimed, ticket, world

HEAD, BASE_HEAD = "a" * 40, "b" * 40
PUSHED_AT = 1_800_000_100


def answers(ports: FakePorts, mergeable: bool | None) -> None:
    """GitHub now answers `mergeable` for #34."""
    key = (REPOSITORY, "34")
    ports.github.pulls[key] = {**ports.github.pulls[key], "mergeable": mergeable}


async def pr_open_into_main(mergeable: bool | None = True) -> FakePorts:
    """Ticket #12 claimed; PR #34 (`Fixes #12`) open into main, GitHub answering `mergeable`."""
    ports = world()
    await claimed(ports)
    ports.github.add_pull(REPOSITORY, pull_answer(REPOSITORY, 34, body="Fixes #12", head_sha=HEAD))
    await ports.dispatch("pull_request", pull_request("opened", ports.github.pulls[(REPOSITORY, "34")]))
    ports.github.add_branch(REPOSITORY, "main", BASE_HEAD)
    answers(ports, mergeable)
    ports.clock.now = PUSHED_AT + 1
    return ports


def reads_of(ports: FakePorts, method: str) -> int:
    return len([call for call in ports.github.calls if call.method == method])


async def test_a_push_to_the_base_that_causes_a_conflict_blocks_the_ticket() -> None:
    """main moves, GitHub now says #34 does not merge: the ticket is blocked."""
    ports = await pr_open_into_main(mergeable=False)
    assert ticket(ports).rails.integration is IntegrationState.PULL_REQUEST_OPEN
    await ports.dispatch("push", push("main", head=BASE_HEAD, pushed_at=PUSHED_AT))
    assert ticket(ports).rails.integration is IntegrationState.BLOCKED


async def test_a_resolved_conflict_unblocks_at_the_next_base_push() -> None:
    """A later push after which #34 merges again brings the rail back to PR open."""
    ports = await pr_open_into_main(mergeable=False)
    await ports.dispatch("push", push("main", head=BASE_HEAD, pushed_at=PUSHED_AT))
    answers(ports, True)
    ports.github.add_branch(REPOSITORY, "main", "c" * 40)
    await ports.dispatch("push", push("main", head="c" * 40, pushed_at=PUSHED_AT + 60), delivery_id="d2")
    assert ticket(ports).rails.integration is IntegrationState.PULL_REQUEST_OPEN


async def test_mergeability_still_computed_is_asked_again_later() -> None:
    """`mergeable: null` right after the push: the delivery is retried, and then it counts."""
    ports = await pr_open_into_main(mergeable=None)
    with pytest.raises(TransientError):
        await ports.dispatch("push", push("main", head=BASE_HEAD, pushed_at=PUSHED_AT))
    answers(ports, False)
    await ports.dispatch("push", push("main", head=BASE_HEAD, pushed_at=PUSHED_AT))
    assert ticket(ports).rails.integration is IntegrationState.BLOCKED


async def test_mergeability_unknown_past_the_window_is_left_to_the_next_push() -> None:
    """Past `REREAD_WINDOW` the delivery ends quietly; the rail stays as it was."""
    ports = await pr_open_into_main(mergeable=None)
    ports.clock.now = PUSHED_AT + REREAD_WINDOW.total_seconds() + 1
    await ports.dispatch("push", push("main", head=BASE_HEAD, pushed_at=PUSHED_AT))
    assert ticket(ports).rails.integration is IntegrationState.PULL_REQUEST_OPEN


async def test_an_older_push_reads_nothing_once_the_base_moved_again() -> None:
    """Coalesced: a push that is no longer the base's head leaves the re-read to the newer push."""
    ports = await pr_open_into_main(mergeable=False)
    before = reads_of(ports, "pull")
    await ports.dispatch("push", push("main", head="9" * 40, pushed_at=PUSHED_AT))
    assert reads_of(ports, "pull") == before
    assert ticket(ports).rails.integration is IntegrationState.PULL_REQUEST_OPEN


async def test_a_push_to_a_branch_no_linked_pull_request_targets_reads_no_pull_request() -> None:
    """A push to a feature branch costs one list read and nothing else of this handler."""
    ports = await pr_open_into_main(mergeable=False)
    before = reads_of(ports, "pull")
    await ports.dispatch("push", push("feature-x", pushed_at=PUSHED_AT))
    assert reads_of(ports, "pull") == before
    assert ticket(ports).rails.integration is IntegrationState.PULL_REQUEST_OPEN


async def test_one_push_reads_no_more_than_the_cap_of_linked_pull_requests() -> None:
    """More linked PRs into main than `MAX_PULLS_PER_PUSH`: one push reads the newest that many
    again (chosen from the record: no list of the branch's open PRs is asked of GitHub)."""
    ports = await pr_open_into_main()
    for number in range(100, 100 + MAX_PULLS_PER_PUSH):
        ports.github.add_pull(REPOSITORY, pull_answer(REPOSITORY, number, body="Fixes #12", head_sha=HEAD))
        key = (REPOSITORY, str(number))
        ports.github.pulls[key] = {**ports.github.pulls[key], "mergeable": True}
        opened = pull_request("opened", ports.github.pulls[key])
        await ports.dispatch("pull_request", opened, delivery_id=f"open-{number}")
    before = reads_of(ports, "pull")
    await ports.dispatch("push", push("main", head=BASE_HEAD, pushed_at=PUSHED_AT))
    assert reads_of(ports, "pull") - before == MAX_PULLS_PER_PUSH


async def test_newer_unlinked_pull_requests_do_not_hide_a_linked_one_from_the_base_move() -> None:
    """#34 links #12; anyone then opens `MAX_PULLS_PER_PUSH` PRs into main from forks (or a busy
    repository simply has that many newer ones). main moves and #34 no longer merges: SPEC says a
    push to a branch that open linked PRs target re-reads their mergeability, yet #34 is never read."""
    ports = await pr_open_into_main(mergeable=False)
    for number in range(100, 100 + MAX_PULLS_PER_PUSH):
        ports.github.add_pull(
            REPOSITORY, pull_answer(REPOSITORY, number, body="typo", head_repository="mallory/web")
        )
    await ports.dispatch("push", push("main", head=BASE_HEAD, pushed_at=PUSHED_AT))
    assert ticket(ports).rails.integration is IntegrationState.BLOCKED
