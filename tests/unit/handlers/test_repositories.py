"""Repository identity through the handlers and the fakes: a delivery's repository is matched by
GitHub's id, so a reused name never touches the old repository's tickets, and a rename moves them."""

from __future__ import annotations

import json
from typing import Any

from policies.model import TicketKey
from tests.fakes import example
from tests.fakes.github import issue_answer, pull_answer
from tests.fakes.ports import FakePorts
from tests.fakes.webhooks import INSTALLATION, REPOSITORY, comment, pull_request
from tests.unit.handlers.steps import RACHEL, world

OLD, NEW = 1001, 2002  # GitHub's ids of the repository first called acme/app, and of the next one


def of(repository_id: int, payload: dict[str, Any], name: str = REPOSITORY) -> dict[str, Any]:
    """The payload as GitHub sends it for the repository `repository_id`, then called `name`."""
    payload["repository"].update({"id": repository_id, "full_name": name})
    return payload


async def publish(ports: FakePorts, repository_id: int, number: int, name: str = REPOSITORY) -> None:
    """rachel publishes issue `number` of the repository `repository_id` (called `name`)."""
    ports.github.add_issue(name, issue_answer(number, assignees=(RACHEL,)))
    await ports.dispatch("issue_comment", of(repository_id, comment(number, "/publish"), name))


def renamed(repository_id: int, old: str, new: str) -> dict[str, Any]:
    """GitHub's real `repository` `renamed` payload, for `repository_id` renamed from `old` to `new`."""
    payload = json.loads(example("api.github.com", "repository", "10-renamed.json"))
    payload["changes"] = {"repository": {"name": {"from": old.split("/")[1]}}}
    payload["installation"] = {"id": INSTALLATION}
    return of(repository_id, payload, new)


async def test_a_new_repository_with_a_reused_name_never_touches_the_old_ones_tickets() -> None:
    """acme/app#12 of the old repository stays as it was when the new acme/app's #12 is published:
    the new one gets a ticket of its own, the old one is kept out of the name's reach."""
    ports = world()
    await publish(ports, OLD, 12)
    old = ports.store.ticket(TicketKey(REPOSITORY, 12))
    assert old is not None
    ports.github.names = {NEW: REPOSITORY}  # the old one deleted, its name taken
    await ports.dispatch("issue_comment", of(NEW, comment(12, "/claim", author=("nora", 404))))
    await publish(ports, NEW, 12)
    new = ports.store.ticket(TicketKey(REPOSITORY, 12))
    assert new is not None and new.revision == old.revision  # published once, nora's claim refused
    kept = ports.store.ticket(TicketKey(f"{REPOSITORY}@{OLD}", 12))
    assert kept is not None and kept.revision == old.revision


async def test_a_rename_moves_the_tickets_and_pull_requests_to_the_new_name() -> None:
    """After `repository` `renamed`, acme/app's ticket and PR are acme/tools's, matched by id."""
    ports = world()
    await publish(ports, OLD, 12)
    pull = pull_answer(REPOSITORY, 40, body="Fixes #12")
    await ports.dispatch("pull_request", of(OLD, pull_request("opened", pull)))
    ports.github.names[OLD] = "acme/tools"
    await ports.dispatch("repository", renamed(OLD, REPOSITORY, "acme/tools"))
    moved = ports.store.ticket(TicketKey("acme/tools", 12))
    assert moved is not None and moved.rails.pull_requests[40].linked
    assert ports.store.ticket(TicketKey(REPOSITORY, 12)) is None
    async with ports.store.read() as reads:
        assert await reads.stored_pull("acme/tools", 40) is not None
        assert await reads.stored_pull(REPOSITORY, 40) is None


async def test_a_command_written_before_a_rename_and_delivered_after_it_runs_under_the_name_now() -> None:
    """carol's `/claim`, written on acme/app#12 and delivered after the `renamed` event (it still
    says acme/app): the same repository, by id, so it claims acme/tools#12; nothing is kept
    under the old name."""
    ports = world()
    await publish(ports, OLD, 12)
    ports.github.names[OLD] = "acme/tools"
    ports.github.add_issue("acme/tools", issue_answer(12, assignees=(RACHEL,)))
    await ports.dispatch("repository", renamed(OLD, REPOSITORY, "acme/tools"))
    await ports.dispatch("issue_comment", of(OLD, comment(12, "/claim", author=("carol", 202))))
    moved = ports.store.ticket(TicketKey("acme/tools", 12))
    assert moved is not None and moved.claimant == "carol"
    assert ports.store.ticket(TicketKey(REPOSITORY, 12)) is None


async def test_a_late_command_of_a_renamed_repository_never_touches_the_one_that_took_its_name() -> None:
    """acme/app (OLD) is renamed acme/tools and a new acme/app (NEW) publishes its own #12; then
    carol's `/claim` written on the old acme/app#12 arrives: the payload's id decides, so it
    claims acme/tools#12, and the new acme/app#12 stays open."""
    ports = world()
    await publish(ports, OLD, 12)
    ports.github.names[OLD] = "acme/tools"
    ports.github.add_issue("acme/tools", issue_answer(12, assignees=(RACHEL,)))
    await ports.dispatch("repository", renamed(OLD, REPOSITORY, "acme/tools"))
    await publish(ports, NEW, 12)
    await ports.dispatch("issue_comment", of(OLD, comment(12, "/claim", author=("carol", 202))))
    moved, new = (
        ports.store.ticket(TicketKey("acme/tools", 12)),
        ports.store.ticket(TicketKey(REPOSITORY, 12)),
    )
    assert moved is not None and moved.claimant == "carol"
    assert new is not None and new.claimant is None and new.work.value == "open"


async def test_a_late_command_of_a_transferred_repository_runs_through_its_new_installation() -> None:
    """acme/app is transferred to bravo, whose installation of the app is 9 (its `transferred`
    event processed): carol's `/claim` written before, sent by the old installation, claims
    bravo/app#12 and its ticket is written through installation 9; dropped when bravo has no
    installation of the app any more. The old installation no longer reaches the repository
    (github.com answers it 404, as the fake does): its name is asked through bravo's."""
    for installed in (True, False):
        ports = world()
        transferred = json.loads(example("api.github.com", "repository", "11-transferred.json"))
        transferred["installation"] = {"id": 9}
        await publish(ports, OLD, 12)
        ports.github.names[OLD] = "bravo/app"
        ports.github.add_issue("bravo/app", issue_answer(12, assignees=(RACHEL,)))
        await ports.dispatch("repository", of(OLD, transferred, "bravo/app"))
        if installed:
            ports.github.installations["bravo/app"] = 9
        await ports.dispatch("issue_comment", of(OLD, comment(12, "/claim", author=("carol", 202))))
        moved = ports.store.ticket(TicketKey("bravo/app", 12))
        assert moved is not None and (moved.claimant == "carol") is installed
        if installed:
            assert ports.store.records.installation_of[TicketKey("bravo/app", 12)] == 9
            asked = [c.installation_id for c in ports.github.calls if c.method == "repository_name"]
            assert asked[-2:] == [INSTALLATION, 9]


async def test_a_rename_whose_event_has_not_arrived_is_followed_by_id() -> None:
    """An event naming the new name first: GitHub says the id's name now, and the records follow."""
    ports = world()
    await publish(ports, OLD, 12)
    ports.github.names[OLD] = "acme/tools"
    ports.github.add_issue("acme/tools", issue_answer(12, assignees=(RACHEL,)))
    await ports.dispatch("issue_comment", of(OLD, comment(12, "/claim", author=("carol", 202)), "acme/tools"))
    moved = ports.store.ticket(TicketKey("acme/tools", 12))
    assert moved is not None and moved.claimant == "carol"


async def test_a_transfer_moves_the_tickets_to_the_new_owner() -> None:
    """GitHub's real `repository` `transferred` payload: acme/app's ticket is now bravo/app's."""
    ports = world()
    await publish(ports, OLD, 12)
    ports.github.names[OLD] = "bravo/app"
    payload = json.loads(example("api.github.com", "repository", "11-transferred.json"))
    payload["installation"] = {"id": INSTALLATION}
    await ports.dispatch("repository", of(OLD, payload, "bravo/app"))
    assert ports.store.ticket(TicketKey("bravo/app", 12)) is not None
    assert ports.store.ticket(TicketKey(REPOSITORY, 12)) is None


async def test_a_late_pull_request_event_of_a_renamed_repository_keeps_its_own_branch_its_own() -> None:
    """PR #40's `opened`, sent before acme/app was renamed acme/tools and delivered after: its head
    is the repository itself (the same id), so the PR is stored as acme/tools's from its own
    branch (it links by branch), not as a fork's."""
    ports = world()
    await publish(ports, OLD, 12)
    ports.github.names[OLD] = "acme/tools"
    await ports.dispatch("repository", renamed(OLD, REPOSITORY, "acme/tools"))
    pull = pull_answer(REPOSITORY, 40, body="Fixes #12")
    pull["head"]["repo"]["id"] = OLD
    await ports.dispatch("pull_request", of(OLD, pull_request("opened", pull)))
    async with ports.store.read() as reads:
        stored = await reads.stored_pull("acme/tools", 40)
    assert stored is not None and stored[0].head_repository == "acme/tools"


async def test_a_rename_into_a_name_passed_on_unseen_moves_its_holder_where_github_says() -> None:
    """acme/site (NEW) became acme/site-old and acme/app (OLD) acme/site, no webhook of NEW's
    seen: OLD's `renamed` asks GitHub where NEW is and moves NEW's ticket there first, never to
    a retired name, its writes kept."""
    ports = world()
    await publish(ports, OLD, 12)
    await publish(ports, NEW, 12, "acme/site")
    ports.github.names.update({OLD: "acme/site", NEW: "acme/site-old"})
    await ports.dispatch("repository", renamed(OLD, REPOSITORY, "acme/site"))
    assert ports.store.records.names == {OLD: "acme/site", NEW: "acme/site-old"}
    assert ports.store.ticket(TicketKey("acme/site-old", 12)) is not None
    assert ports.store.ticket(TicketKey("acme/site@2002", 12)) is None


async def test_a_swap_seen_first_by_the_renamed_ones_webhook_retires_neither() -> None:
    """acme/app (OLD) and acme/site (NEW) swapped names, no webhook of NEW's seen: OLD's `renamed`
    asks GitHub where NEW is (acme/app, OLD's old name) and moves both together, NEW's ticket
    to acme/app, never to a retired name."""
    ports = world()
    await publish(ports, OLD, 12)
    await publish(ports, NEW, 14, "acme/site")
    ports.github.names.update({OLD: "acme/site", NEW: REPOSITORY})
    await ports.dispatch("repository", renamed(OLD, REPOSITORY, "acme/site"))
    assert ports.store.records.names == {OLD: "acme/site", NEW: REPOSITORY}
    assert ports.store.ticket(TicketKey(REPOSITORY, 14)) is not None
    assert ports.store.ticket(TicketKey("acme/site", 12)) is not None


async def test_a_rename_into_a_name_passed_along_a_chain_moves_every_holder_where_github_says() -> None:
    """acme/x (3003) became acme/y, acme/site (NEW) acme/x, acme/app (OLD) acme/site, only OLD's
    `renamed` seen: GitHub is asked along the chain, and 3003's ticket goes to acme/y."""
    ports = world()
    await publish(ports, OLD, 12)
    await publish(ports, NEW, 13, "acme/site")
    await publish(ports, 3003, 14, "acme/x")
    ports.github.names.update({OLD: "acme/site", NEW: "acme/x", 3003: "acme/y"})
    await ports.dispatch("repository", renamed(OLD, REPOSITORY, "acme/site"))
    assert ports.store.records.names == {OLD: "acme/site", NEW: "acme/x", 3003: "acme/y"}
    assert ports.store.ticket(TicketKey("acme/y", 14)) is not None
    assert ports.store.ticket(TicketKey("acme/x", 13)) is not None
