"""Which ticket a command and a check are about: a PR linked only from its Development sidebar
takes commands for that ticket; `#N` naming another ticket on an issue runs on neither; railyard's
own check suite never counts as another app's failing check, whatever slug the app has."""

from __future__ import annotations

from handlers.answers import PullTarget
from policies.states import IntegrationState, WorkState
from tests.fakes.github import REPOSITORY_ID, pull_answer
from tests.fakes.webhooks import REPOSITORY, pull_request
from tests.unit.handlers.steps import CAROL, RITA, claimed, replies, say, ticket, world


async def test_a_command_on_a_pr_linked_only_from_the_sidebar_applies_to_that_ticket() -> None:
    """A PR linked to #12 only by the issue's Development sidebar: `/deliver` on the PR applies to #12."""
    ports = world()
    await claimed(ports)
    ports.github.link_from_sidebar(REPOSITORY, 40, 12)
    pull = ports.github.add_pull(REPOSITORY, pull_answer(REPOSITORY, 40, body="Retries."))
    await ports.dispatch("pull_request", pull_request("opened", pull))
    assert ticket(ports).rails.pull_requests[40].linked  # the rail knows the link
    assert ticket(ports).rails.integration is IntegrationState.PULL_REQUEST_OPEN
    await say(ports, "/deliver Done in the PR.", by=CAROL, number=40, on_pull_request=True)
    assert ticket(ports).work is WorkState.DELIVERED


async def test_a_command_on_a_pr_from_the_claimed_branch_applies_after_the_repository_was_renamed() -> None:
    """#12 claimed on agent/12-fix; `/deliver` is said on PR #40 from that branch, which railyard
    has not seen, and by the time the PR is read acme/app is acme/application: GitHub's answer
    names the head's repository so, the comment acme/app, but the ids say it is the same
    repository, so the branch links #12 and the command applies to it."""
    ports = world()
    await claimed(ports, branch="agent/12-fix")
    renamed = pull_answer(
        REPOSITORY, 40, body="Retries.", head_ref="agent/12-fix", head_repository="acme/application",
        head_repository_id=REPOSITORY_ID,
    )  # fmt: skip
    ports.github.add_pull(REPOSITORY, renamed)
    await say(ports, "/deliver Done in the PR.", by=CAROL, number=40, on_pull_request=True)
    assert ticket(ports).work is WorkState.DELIVERED


async def test_a_command_naming_another_ticket_on_an_issue_does_not_run_on_this_issue() -> None:
    """`/send-back #13 ...` written on issue #12 names ticket #13: it is refused with a reply
    saying so, and #12 does not move."""
    from tests.fakes.github import issue_answer
    from tests.unit.handlers.steps import RACHEL

    ports = world()
    ports.github.add_issue(REPOSITORY, issue_answer(13, assignees=(RACHEL,)))
    await claimed(ports)
    ports.github.add_branch(REPOSITORY, "agent/12-fix", "b" * 40)
    await say(ports, "/deliver branch=agent/12-fix Fixed the retries.", by=CAROL)
    await say(ports, "/publish", number=13)
    assert ticket(ports).work is WorkState.DELIVERED
    await say(ports, "/send-back #13 The tests for #13 still fail.", by=RITA,
              created_at="2026-11-30T10:05:00Z")  # fmt: skip
    assert ticket(ports).work is WorkState.DELIVERED  # #12 was not named: it must not move
    [told] = [r.message for r in replies(ports.store.answers) if isinstance(r.message, PullTarget)]
    assert (told.target, told.issue) == (13, 12)


async def test_railyards_own_check_suite_does_not_block_the_pr() -> None:
    """railyard's own check suite (its app id, registered as `railyard-acme`) completes
    `action_required` until acceptance, as its check does: the PR is not `blocked` by it."""
    from tests.fakes.ports import APP_ID
    from tests.fakes.webhooks import check_run

    ports = world()
    await claimed(ports)
    head = "a" * 40
    pull = ports.github.add_pull(REPOSITORY, pull_answer(REPOSITORY, 40, body="Fixes #12", head_sha=head))
    await ports.dispatch("pull_request", pull_request("opened", pull))
    assert ticket(ports).rails.integration is IntegrationState.PULL_REQUEST_OPEN
    suite = {
        "id": 9, "head_sha": head, "status": "completed", "conclusion": "action_required",
        "updated_at": "2026-11-30T10:05:00Z", "latest_check_runs_count": 1,
        "app": {"id": APP_ID, "slug": "railyard-acme", "name": "railyard-acme"},
    }  # fmt: skip
    await ports.dispatch("check_suite", {**check_run(head), "check_suite": suite, "action": "completed"})
    assert ticket(ports).rails.integration is IntegrationState.PULL_REQUEST_OPEN
