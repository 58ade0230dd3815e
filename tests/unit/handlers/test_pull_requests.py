"""`pull_request` events through the handlers and the in-memory fakes."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest

from app.views.render import StatusView, render_status_comment
from handlers.answers import CheckRun
from handlers.errors import TransientError
from policies.states import DeploymentState, IntegrationState
from tests.fakes.github import issue_answer, pull_answer
from tests.fakes.webhooks import INSTALLATION, REPOSITORY, check_run, deployment_status, pull_request
from tests.unit.handlers.steps import RACHEL, answers_after, claimed, published, say, ticket, world

HEAD, MERGE, DEPLOYED = "a" * 40, "e" * 40, "d" * 40


async def test_a_pull_request_that_fixes_the_ticket_links_it_and_gets_the_check() -> None:
    """A PR whose body says `Fixes #12` links the ticket, records whether it merges, and gets the check."""
    ports = world()
    await published(ports)
    before = len(ports.store.answers)
    pull = pull_answer(REPOSITORY, 40, body="Fixes #12", head_sha=HEAD, mergeable=True)
    ports.github.add_pull(REPOSITORY, pull)
    await ports.dispatch("pull_request", pull_request("opened", pull))
    rails = ticket(ports).rails
    assert rails.pull_requests[40].linked and rails.pull_requests[40].open
    assert rails.integration is IntegrationState.PULL_REQUEST_OPEN
    assert rails.mergeability[(40, HEAD, "main")].mergeable is True
    assert CheckRun(INSTALLATION, REPOSITORY, 40, HEAD) in answers_after(ports, before)


async def test_a_pull_request_from_the_claimed_branch_links_the_ticket() -> None:
    """A PR whose head is the branch the claim reported links the ticket without any keyword."""
    ports = world()
    await claimed(ports, branch="agent/12-fix")
    pull = pull_answer(REPOSITORY, 41, body="Retries.", head_ref="agent/12-fix")
    await ports.dispatch("pull_request", pull_request("opened", pull))
    assert ticket(ports).rails.pull_requests[41].linked


async def test_a_fork_branch_of_the_same_name_links_nothing() -> None:
    """A PR from a fork whose branch has the claimed branch's name does not link the ticket."""
    ports = world()
    await claimed(ports, branch="agent/12-fix")
    pull = pull_answer(REPOSITORY, 42, head_ref="agent/12-fix", head_repository="mallory/app")
    await ports.dispatch("pull_request", pull_request("opened", pull))
    assert 42 not in ticket(ports).rails.pull_requests


async def test_a_merge_is_recorded_and_the_deployments_seen_are_checked_again() -> None:
    """A linked PR merging makes the ticket merged, and an earlier deployment containing it deploys it."""
    ports = world()
    await published(ports)
    await ports.dispatch("deployment_status", deployment_status(7, DEPLOYED, "success"))
    ports.ancestry.pairs.add((MERGE, DEPLOYED))
    pull = pull_answer(
        REPOSITORY, 40, body="Fixes #12", state="closed", merged_at="2026-11-30T10:30:00Z",
        merge_commit=MERGE, updated_at="2026-11-30T10:30:00Z",
    )  # fmt: skip
    await ports.dispatch("pull_request", pull_request("closed", pull))
    rails = ticket(ports).rails
    assert rails.integration is IntegrationState.MERGED and rails.merge_commit == MERGE
    assert rails.deployments["production"] is DeploymentState.DEPLOYED
    assert (MERGE, DEPLOYED) in ports.ancestry.compared


async def test_an_older_pull_request_event_arriving_late_does_not_undo_the_newer() -> None:
    """An `edited` event older than the stored PR leaves the ticket's PR as the newer event showed it."""
    ports = world()
    await published(ports)
    newer = pull_answer(REPOSITORY, 40, body="Fixes #12", state="closed", updated_at="2026-11-30T11:00:00Z")
    older = pull_answer(REPOSITORY, 40, body="Fixes #12", updated_at="2026-11-30T10:00:00Z")
    await ports.dispatch("pull_request", pull_request("closed", newer), delivery_id="d-new")
    await ports.dispatch("pull_request", pull_request("edited", older), delivery_id="d-old")
    assert not ticket(ports).rails.pull_requests[40].open


async def test_a_ticket_edited_out_in_the_second_the_pr_opened_is_not_left_showing_it_open() -> None:
    """PR #40 opens with `Fixes #12`, its body is corrected to `Fixes #13` within the same second
    (GitHub's `updated_at` has whole seconds), then it merges. In every order of arrival #13 is
    merged and #12, linked by nothing, does not show the PR open."""
    opened = pull_answer(REPOSITORY, 40, body="Fixes #12", head_sha=HEAD, updated_at="2026-11-30T10:00:00Z")
    edited = {**opened, "body": "Fixes #13"}  # the same second
    closed = {**edited, "state": "closed", "merged": True, "merged_at": "2026-11-30T10:30:00Z",
              "merge_commit_sha": MERGE, "updated_at": "2026-11-30T10:30:00Z"}  # fmt: skip
    events = [("opened", opened), ("edited", edited), ("closed", closed)]
    for order in itertools.permutations(events):
        ports = world()
        await published(ports)
        ports.github.add_issue(REPOSITORY, issue_answer(13, assignees=(RACHEL,)))
        await say(ports, "/publish", number=13)
        for action, pull in order:
            await ports.dispatch("pull_request", pull_request(action, pull), delivery_id=action)
        shown = (ticket(ports, 12).rails.integration, ticket(ports, 13).rails.integration)
        assert shown == (IntegrationState.UNREPORTED, IntegrationState.MERGED), [a for a, _ in order]


FORK = "mallory/app"


async def test_an_outsiders_fork_pr_with_a_failing_check_only_mentions_the_ticket() -> None:
    """A fork's PR by an account without a role saying `Fixes #12` leaves the rail alone, even
    when its check fails: the ticket records a mention, never `pull_request_open` or `blocked`."""
    ports = world()
    await published(ports)
    pull = pull_answer(REPOSITORY, 99, body="Fixes #12", head_repository=FORK, author="mallory")
    ports.github.add_pull(REPOSITORY, pull)
    await ports.dispatch("pull_request", pull_request("opened", pull))
    await ports.dispatch("check_run", check_run(HEAD, conclusion="failure"))
    rails = ticket(ports).rails
    assert rails.integration is IntegrationState.UNREPORTED
    assert rails.pull_requests[99].mention and not rails.pull_requests[99].linked


async def test_an_outsiders_fork_pr_closed_unmerged_stops_showing_as_mentioning_the_ticket() -> None:
    """mallory's mention-only fork PR closes without a merge: the ticket records the close once
    (the status comment no longer says the PR mentions it); her reopening and closing it again
    records nothing more, so an outsider's toggling costs the installation nothing."""
    ports = world()
    await published(ports)
    opened = pull_answer(REPOSITORY, 99, body="Fixes #12", head_repository=FORK, author="mallory")
    await ports.dispatch("pull_request", pull_request("opened", opened), delivery_id="opened")
    closed = {**opened, "state": "closed", "updated_at": "2026-11-30T10:05:00Z"}
    await ports.dispatch("pull_request", pull_request("closed", closed), delivery_id="closed")
    shown = ticket(ports)
    assert shown.rails.pull_requests[99].mention and not shown.rails.pull_requests[99].open
    body = render_status_comment(StatusView(shown))
    assert "#99 mentioned this ticket, closed without merging" in body and "#99 mentions" not in body
    revision = shown.revision
    for minute, state in [(6, "open"), (7, "closed"), (8, "open"), (9, "closed")]:
        toggled = {**opened, "state": state, "updated_at": f"2026-11-30T10:{minute:02d}:00Z"}
        action = "reopened" if state == "open" else "closed"
        await ports.dispatch("pull_request", pull_request(action, toggled), delivery_id=f"{action}-{minute}")
    assert ticket(ports).revision == revision


async def test_a_runners_fork_pr_links_the_ticket() -> None:
    """A fork's PR whose author holds a role (carol runs) links `Fixes #12` like any PR."""
    ports = world()
    await published(ports)
    pull = pull_answer(REPOSITORY, 98, body="Fixes #12", head_repository="carol/app", author="carol")
    ports.github.add_pull(REPOSITORY, pull)
    await ports.dispatch("pull_request", pull_request("opened", pull))
    await ports.dispatch("check_run", check_run(HEAD, conclusion="failure"))
    assert ticket(ports).rails.integration is IntegrationState.BLOCKED


async def test_an_outsiders_fork_pr_merged_by_a_maintainer_merges_the_ticket() -> None:
    """The merge of a mention-only fork PR counts: only someone GitHub lets merge can merge it."""
    ports = world()
    await published(ports)
    opened = pull_answer(REPOSITORY, 99, body="Fixes #12", head_repository=FORK, author="mallory")
    await ports.dispatch("pull_request", pull_request("opened", opened))
    merged = pull_answer(
        REPOSITORY, 99, body="Fixes #12", head_repository=FORK, author="mallory", state="closed",
        merged_at="2026-11-30T10:30:00Z", merge_commit=MERGE, updated_at="2026-11-30T10:30:00Z",
    )  # fmt: skip
    await ports.dispatch("pull_request", pull_request("closed", merged))
    rails = ticket(ports).rails
    assert rails.integration is IntegrationState.MERGED and rails.merge_commit == MERGE


async def test_a_fork_prs_author_is_asked_about_once_not_at_every_event() -> None:
    """The author's roles are asked when the PR opens; its pushes and check storms ask nothing."""
    ports = world()
    await published(ports)
    pull = pull_answer(REPOSITORY, 99, body="Fixes #12", head_repository=FORK, author="mallory")
    await ports.dispatch("pull_request", pull_request("opened", pull))
    for check_id in range(600, 610):
        await ports.dispatch("check_run", check_run(HEAD, conclusion="failure", check_id=check_id))
    await ports.dispatch("pull_request", pull_request("synchronize", pull))
    assert [login for login, _ in ports.roles.asked if login == "mallory"] == ["mallory"]
    assert ticket(ports).rails.integration is IntegrationState.UNREPORTED


def _edited(pull: dict[str, object], minute: int, body: str) -> dict[str, object]:
    """The PR edited at 10:`minute`, its body now `body`."""
    return {**pull, "body": body, "updated_at": f"2026-11-30T10:{minute:02d}:00Z"}


async def test_editing_a_fork_pr_that_names_the_same_tickets_asks_nothing_and_records_nothing() -> None:
    """mallory (no role) edits her `Fixes #12` fork PR ten times: her roles are asked once, the
    mention is recorded once, and the ticket's revision and answers do not move."""
    ports = world()
    await published(ports)
    pull = pull_answer(REPOSITORY, 99, body="Fixes #12", head_repository=FORK, author="mallory")
    await ports.dispatch("pull_request", pull_request("opened", pull))
    revision, before = ticket(ports).revision, len(ports.store.answers)
    for minute in range(1, 11):
        edit = _edited(pull, minute, "Fixes #12" + " " * minute)
        await ports.dispatch("pull_request", pull_request("edited", edit))
    assert [login for login, _ in ports.roles.asked if login == "mallory"] == ["mallory"]
    assert ticket(ports).revision == revision and answers_after(ports, before) == []
    assert ticket(ports).rails.pull_requests[99].mention


async def test_an_edit_that_names_a_new_ticket_asks_again_and_mentions_only_the_new_one() -> None:
    """mallory's edit adds `fixes #13`: her roles are asked again (the answer decides #13's
    standing), #13 records the mention, and #12, already mentioned, records nothing new."""
    ports = world()
    await published(ports)
    ports.github.add_issue(REPOSITORY, issue_answer(13, assignees=(RACHEL,)))
    await say(ports, "/publish", number=13)
    pull = pull_answer(REPOSITORY, 99, body="Fixes #12", head_repository=FORK, author="mallory")
    await ports.dispatch("pull_request", pull_request("opened", pull))
    revision = ticket(ports).revision
    await ports.dispatch("pull_request", pull_request("edited", _edited(pull, 5, "Fixes #12, fixes #13")))
    assert [login for login, _ in ports.roles.asked if login == "mallory"] == ["mallory", "mallory"]
    assert ticket(ports, 13).rails.pull_requests[99].mention
    assert ticket(ports).revision == revision


async def test_a_role_holders_edit_that_changes_no_link_records_nothing() -> None:
    """carol (a runner) edits her fork PR's description five times, still `Fixes #12`: the ticket
    records no event and gets no new answer; an edit dropping the link records the unlinking."""
    ports = world()
    await published(ports)
    pull = pull_answer(REPOSITORY, 98, body="Fixes #12", head_repository="carol/app", author="carol")
    await ports.dispatch("pull_request", pull_request("opened", pull))
    revision, before = ticket(ports).revision, len(ports.store.answers)
    for minute in range(1, 6):
        await ports.dispatch(
            "pull_request", pull_request("edited", _edited(pull, minute, f"Fixes #12 ({minute})"))
        )
    assert ticket(ports).revision == revision and answers_after(ports, before) == []
    await ports.dispatch("pull_request", pull_request("edited", _edited(pull, 9, "Unrelated now")))
    assert ticket(ports).revision > revision and not ticket(ports).rails.pull_requests[98].linked


async def test_a_pr_naming_more_tickets_than_the_cap_links_only_the_lowest_numbers() -> None:
    """`Fixes #1` ... `fixes #12` in one body: the ten lowest count (MAX_NAMED_TICKETS), so #12
    is not linked and its status comment is not written."""
    ports = world()
    await published(ports)
    body = ", ".join(f"fixes #{n}" for n in range(1, 13))
    pull = pull_answer(REPOSITORY, 40, body=body, head_sha=HEAD)
    before = len(ports.store.answers)
    await ports.dispatch("pull_request", pull_request("opened", pull))
    assert 40 not in ticket(ports).rails.pull_requests
    assert ticket(ports).rails.integration is IntegrationState.UNREPORTED
    assert answers_after(ports, before) == [CheckRun(INSTALLATION, REPOSITORY, 40, HEAD)]


async def test_a_push_that_leaves_the_conflict_keeps_the_pull_request_blocked() -> None:
    """#40 conflicts with its base (blocked); its author pushes a commit that does not resolve
    it. Right after the push GitHub answers `mergeable: null` while it computes: the delivery
    is retried (as when the base moves), and GitHub's `false` then keeps the ticket blocked."""
    ports = world()
    await published(ports)
    pull = pull_answer(REPOSITORY, 40, body="Fixes #12", head_sha=HEAD, mergeable=False)
    ports.github.add_pull(REPOSITORY, pull)
    await ports.dispatch("pull_request", pull_request("opened", pull), delivery_id="o")
    assert ticket(ports).rails.integration is IntegrationState.BLOCKED
    pushed = {**pull, "head": {**pull["head"], "sha": "f" * 40}, "mergeable": None,
              "updated_at": "2026-11-30T10:20:00Z"}  # fmt: skip
    ports.github.add_pull(REPOSITORY, pushed)
    ports.clock.now = datetime(2026, 11, 30, 10, 20, 3, tzinfo=UTC).timestamp()  # delivered at once
    with pytest.raises(TransientError):
        await ports.dispatch("pull_request", pull_request("synchronize", pushed), delivery_id="s")
    ports.github.add_pull(REPOSITORY, {**pushed, "mergeable": False})  # GitHub has computed it
    await ports.dispatch("pull_request", pull_request("synchronize", pushed), delivery_id="s")
    assert ticket(ports).rails.integration is IntegrationState.BLOCKED


async def test_mergeability_unknown_long_after_the_push_is_left_to_the_next_one() -> None:
    """Past the re-read window a `mergeable: null` answer ends the delivery quietly."""
    ports = world()
    await published(ports)
    pull = pull_answer(REPOSITORY, 40, body="Fixes #12", head_sha=HEAD, mergeable=None)
    ports.github.add_pull(REPOSITORY, pull)
    ports.clock.now = datetime(2026, 11, 30, 11, 0, tzinfo=UTC).timestamp()
    await ports.dispatch("pull_request", pull_request("opened", pull))
    assert ticket(ports).rails.integration is IntegrationState.PULL_REQUEST_OPEN
