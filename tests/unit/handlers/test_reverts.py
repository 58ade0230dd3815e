"""A merged revert PR through the handlers and the in-memory fakes: `reverted` on the ticket it undoes."""

from __future__ import annotations

from policies.events import EventType
from policies.states import IntegrationState
from tests.fakes.github import pull_answer
from tests.fakes.ports import FakePorts
from tests.fakes.webhooks import REPOSITORY, pull_request
from tests.unit.handlers.steps import KEY, claimed, ticket, world

MERGE = "d" * 40
MERGED_AT = "2026-11-30T10:30:00Z"


async def merged_ticket() -> FakePorts:
    """Ticket #12 claimed, and PR #34 (`Fixes #12`) merged as MERGE."""
    ports = world()
    await claimed(ports)
    pull = pull_answer(REPOSITORY, 34, body="Fixes #12")
    await ports.dispatch("pull_request", pull_request("opened", pull), delivery_id="open-34")
    done = pull_answer(
        REPOSITORY, 34, body="Fixes #12", state="closed", merged_at=MERGED_AT, merge_commit=MERGE,
        updated_at=MERGED_AT,
    )  # fmt: skip
    await ports.dispatch("pull_request", pull_request("closed", done), delivery_id="merge-34")
    return ports


def revert(number: int, body: str, *, title: str = 'Revert "Cap retries"', merge: str = "e" * 40) -> dict:
    """`pull_request` `closed`: PR `number` merged, as GitHub's revert button writes it."""
    pull = pull_answer(
        REPOSITORY, number, body=body, title=title, state="closed", merged_at="2026-11-30T12:00:00Z",
        merge_commit=merge, updated_at="2026-11-30T12:00:00Z", head_ref="revert-34-agent/12",
    )  # fmt: skip
    return pull_request("closed", pull)


def reverted_events(ports: FakePorts) -> list[dict]:
    return [dict(e.event.data) for e in ports.store.history(KEY) if e.event.type is EventType.REVERTED]


async def test_a_merged_revert_of_the_tickets_pull_request_records_reverted() -> None:
    """`Reverts acme/app#34` merged: `reverted` on #12, whose repository rail stays merged."""
    ports = await merged_ticket()
    await ports.dispatch("pull_request", revert(40, "Reverts acme/app#34"), delivery_id="merge-40")
    assert ticket(ports).reverts == ((34, 40),)
    assert ticket(ports).rails.integration is IntegrationState.MERGED
    [data] = reverted_events(ports)
    assert (data["pull_request"], data["reverted_by"], data["merge_commit"]) == (34, 40, MERGE)


async def test_a_redelivered_revert_records_it_once() -> None:
    """The same delivery twice (GitHub's redelivery keeps its id), or a second delivery of it: once."""
    ports = await merged_ticket()
    for delivery in ("merge-40", "merge-40", "merge-40-again"):
        await ports.dispatch("pull_request", revert(40, "Reverts acme/app#34"), delivery_id=delivery)
    assert len(reverted_events(ports)) == 1


async def test_a_revert_naming_another_repository_records_nothing() -> None:
    """`Reverts other/repo#34` is another repository's PR #34: this ticket is untouched."""
    ports = await merged_ticket()
    revision = ticket(ports).revision
    await ports.dispatch("pull_request", revert(40, "Reverts other/repo#34"), delivery_id="merge-40")
    assert ticket(ports).reverts == ()
    assert ticket(ports).revision == revision


async def test_a_revert_commit_naming_the_merge_commit_records_reverted() -> None:
    """A `Revert ...` PR without GitHub's body: its merge commit's `This reverts commit MERGE.` counts."""
    ports = await merged_ticket()
    message = f'Revert "Cap retries"\n\nThis reverts commit {MERGE}.'
    ports.github.commits[(REPOSITORY, "f" * 40)] = {"sha": "f" * 40, "commit": {"message": message}}
    await ports.dispatch("pull_request", revert(41, "Undo it.", merge="f" * 40), delivery_id="merge-41")
    assert ticket(ports).reverts == ((34, 41),)


async def test_a_merged_pull_request_that_is_no_revert_reads_no_commit() -> None:
    """An ordinary merged PR costs no commit read, whatever its body says besides."""
    ports = await merged_ticket()
    await ports.dispatch("pull_request", revert(42, "Cleanup.", title="Tidy up"), delivery_id="merge-42")
    assert ticket(ports).reverts == ()
    assert not [call for call in ports.github.calls if call.method == "commit"]
