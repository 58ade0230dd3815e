"""Slash-commands in comments, through the handlers and the in-memory fakes (no server, no database)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from app.views.replies_text import reply_body
from handlers.answers import (
    ArtifactNotFound,
    Assign,
    CannotRunYet,
    NearMiss,
    PullTarget,
    Reaction,
    Refused,
    ReopenedNotice,
    Reply,
    StatusAnswer,
    StatusComment,
    Unassign,
)
from handlers.errors import CannotVerify, TransientError
from handlers.ports import RoleEntry, Rules
from policies.budgets import command_budget
from policies.refusals import RefusalCode
from policies.states import IntegrationState, Role, WorkState
from tests.fakes.github import pull_answer
from tests.fakes.ports import APP_ID, FakePorts
from tests.fakes.store import MemoryUnit
from tests.fakes.webhooks import INSTALLATION, REPOSITORY, check_run, pull_request
from tests.unit.handlers.steps import (
    CAROL,
    KEY,
    NORA,
    RACHEL,
    RITA,
    answers_after,
    claimed,
    published,
    replies,
    say,
    ticket,
    world,
)


async def test_a_claim_assigns_the_claimant_and_starts_the_watch_without_a_reaction() -> None:
    """A runner's /claim claims the ticket, assigns the runner and records the attempt's start; on the
    issue the status comment acknowledges it, so no `+1` is written (one content write fewer)."""
    ports = world()
    await published(ports)
    before = len(ports.store.answers)
    comment_id = await say(ports, "/claim", by=CAROL, created_at="2026-11-30T11:00:00Z")
    claimed_ticket = ticket(ports)
    assert (claimed_ticket.work, claimed_ticket.claimant, claimed_ticket.attempt) == (
        WorkState.CLAIMED,
        "carol",
        1,
    )
    assert answers_after(ports, before) == [
        Assign(INSTALLATION, REPOSITORY, 12, ("carol",), f"claim:{comment_id}"),
    ]
    sign = ports.store.sign_of_life(KEY, 1)
    assert sign is not None
    assert (sign.kind, sign.at) == ("claim", datetime(2026, 11, 30, 11, 0, tzinfo=UTC))


async def test_a_reopen_unassigns_the_previous_claimant_and_tells_them_why_once() -> None:
    """rita reopens carol's claim: carol is unassigned and told the reason, under keys of the
    comment's id, and GitHub delivering the comment again adds nothing."""
    ports = world()
    await claimed(ports)
    before = len(ports.store.answers)
    comment_id = await say(ports, "/reopen The approach does not scale", by=RITA)
    assert ticket(ports).work is WorkState.OPEN and ticket(ports).claimant is None
    told = ReopenedNotice(
        INSTALLATION, REPOSITORY, 12, "carol", "rita", "The approach does not scale", False,
        f"reopened:{comment_id}",
    )  # fmt: skip
    unassigned = Unassign(INSTALLATION, REPOSITORY, 12, ("carol",), f"reopen:{comment_id}")
    assert [a for a in answers_after(ports, before) if not isinstance(a, StatusComment)] == [unassigned, told]
    after = len(ports.store.answers)
    await say(ports, "/reopen The approach does not scale", by=RITA, comment_id=comment_id)
    assert answers_after(ports, after) == []


async def test_a_claimant_giving_the_work_up_is_unassigned_and_named_as_the_one_who_did() -> None:
    """carol reopens her own claim: she is unassigned; the notice says she released it."""
    ports = world()
    await claimed(ports)
    before = len(ports.store.answers)
    comment_id = await say(ports, "/reopen Out of my depth here", by=CAROL)
    answers = answers_after(ports, before)
    assert Unassign(INSTALLATION, REPOSITORY, 12, ("carol",), f"reopen:{comment_id}") in answers
    [notice] = [a for a in answers if isinstance(a, ReopenedNotice)]
    assert (notice.claimant, notice.by, notice.released) == ("carol", "carol", True)


async def test_a_renamed_claimant_giving_the_work_up_is_unassigned_by_the_login_they_have_now() -> None:
    """carol, renamed carol-2 since her claim, reopens it: the login unassigned is carol-2, the
    account's login now, not the one it had when it claimed."""
    ports = world()
    await claimed(ports)
    comment_id = await say(ports, "/reopen Moving on", by=("carol-2", CAROL[1]))
    assert ticket(ports).work is WorkState.OPEN
    assert Unassign(INSTALLATION, REPOSITORY, 12, ("carol-2",), f"reopen:{comment_id}") in ports.store.answers


async def test_a_refused_command_gets_one_reply_and_its_redelivery_none() -> None:
    """A /claim by someone who is no runner is answered once with the refusal, even when redelivered."""
    ports = world()
    await published(ports)
    before = len(ports.store.answers)
    comment_id = await say(ports, "/claim", by=NORA)
    await say(ports, "/claim", by=NORA, comment_id=comment_id)  # GitHub delivers it again
    [reply] = answers_after(ports, before)
    assert isinstance(reply, Reply) and isinstance(reply.message, Refused)
    assert reply.message.refusal.code is RefusalCode.NOT_ALLOWED
    assert (reply.author, reply.comment_id) == ("nora", comment_id)
    assert ticket(ports).work is WorkState.OPEN


async def test_a_near_miss_is_answered_with_the_command_it_looks_like() -> None:
    """`/acept` runs nothing and is answered with the command it resembles."""
    ports = world()
    await say(ports, "/acept")
    [reply] = ports.store.answers
    assert isinstance(reply, Reply) and reply.message == NearMiss("acept", "accept")
    assert ports.store.ticket(KEY) is None


async def test_a_bot_is_ignored_unless_a_role_names_it() -> None:
    """Another bot's /claim runs only when the repository's rules name that bot by login."""
    ports = world()
    await published(ports)
    before = len(ports.store.answers)
    bot = ("coder-bot[bot]", 909)
    await say(ports, "/claim", by=bot, bot=True)
    assert answers_after(ports, before) == []
    assert ticket(ports).work is WorkState.OPEN

    ports.configs.default = Rules("blob-sha-1", roles={Role.RUNNER: (RoleEntry(login="coder-bot[bot]"),)})
    ports.roles.by_login = {**ports.roles.by_login, "coder-bot[bot]": frozenset({Role.RUNNER})}
    await say(ports, "/claim", by=bot, bot=True)
    assert ticket(ports).claimant == "coder-bot[bot]"


async def test_the_apps_own_comment_is_never_acted_on() -> None:
    """A comment railyard itself wrote (through its app) runs nothing, not even a rules lookup."""
    ports = world()
    await say(ports, "/publish", via_app=APP_ID)
    assert ports.store.ticket(KEY) is None
    assert ports.store.answers == [] and ports.configs.loads == []


async def test_a_command_on_a_pull_request_gets_a_reaction_where_it_was_written() -> None:
    """On a PR the status comment is not in sight: an applied command there is acknowledged `+1`."""
    ports = world()
    await claimed(ports)
    ports.github.add_pull(REPOSITORY, pull_answer(REPOSITORY, 40, body="Fixes #12"))
    before = len(ports.store.answers)
    comment_id = await say(ports, "/deliver Done in the PR.", by=CAROL, number=40, on_pull_request=True)
    assert ticket(ports).work is WorkState.DELIVERED
    assert answers_after(ports, before) == [Reaction(INSTALLATION, REPOSITORY, comment_id, "+1")]


async def test_a_command_on_a_pull_request_that_links_no_ticket_is_answered_with_the_target() -> None:
    """A command on a PR that links no ticket asks which ticket is meant, and runs nothing."""
    ports = world()
    ports.github.add_pull(REPOSITORY, pull_answer(REPOSITORY, 40, body="Tidy up."))
    await say(ports, "/deliver Done.", by=CAROL, number=40, on_pull_request=True)
    [reply] = ports.store.answers
    assert isinstance(reply, Reply) and reply.message == PullTarget(None, ())
    assert reply.number == 40


async def test_a_delivery_of_an_unknown_commit_is_answered_and_not_executed() -> None:
    """`/deliver commit=SHA` of a commit GitHub does not have is answered and leaves the ticket claimed."""
    ports = world()
    await claimed(ports)
    history, before = len(ports.store.history(KEY)), len(ports.store.answers)
    await say(ports, "/deliver commit=deadbeef1 Fixed the retries.", by=CAROL)
    [reply] = answers_after(ports, before)
    assert isinstance(reply, Reply)
    assert reply.message == ArtifactNotFound("commit", "deadbeef1", REPOSITORY)
    assert ticket(ports).work is WorkState.CLAIMED
    assert len(ports.store.history(KEY)) == history


async def test_a_delivery_of_a_known_branch_records_its_head() -> None:
    """`/deliver branch=NAME` delivers the branch's head commit and reports the branch on the ticket."""
    ports = world()
    await claimed(ports)
    ports.github.add_branch(REPOSITORY, "agent/12-fix", "b" * 40)
    await say(ports, "/deliver branch=agent/12-fix Fixed the retries.", by=CAROL)
    delivered = ticket(ports)
    assert delivered.work is WorkState.DELIVERED
    assert delivered.last_delivery is not None and delivered.last_delivery.commit == "b" * 40
    assert delivered.rails.branches["agent/12-fix"].sha == "b" * 40


async def test_roles_github_will_not_verify_are_answered_and_the_delivery_retried() -> None:
    """When GitHub will not say whether the author holds a role, they are told and the error propagates."""
    ports = world()
    await published(ports)
    ports.roles.unverifiable.add("carol")
    before = len(ports.store.answers)
    with pytest.raises(CannotVerify):
        await say(ports, "/claim", by=CAROL)
    [reply] = answers_after(ports, before)
    assert isinstance(reply, Reply) and isinstance(reply.message, CannotRunYet)
    assert ticket(ports).work is WorkState.OPEN


async def test_a_comment_retried_or_delivered_again_spends_the_command_budget_once() -> None:
    """`limits.commands_per_hour: 2`: carol's `/claim` is retried twice while GitHub will not say
    whether she is a runner, then runs, then is delivered again; it cost one command, so her
    `/reopen` still runs."""
    ports = world(Rules("blob-sha-1", commands_per_hour=2))
    await published(ports)
    ports.roles.unverifiable.add("carol")
    for _ in range(2):
        with pytest.raises(CannotVerify):
            await say(ports, "/claim", by=CAROL, comment_id=7001)
    ports.roles.unverifiable.clear()
    await say(ports, "/claim", by=CAROL, comment_id=7001)
    await say(ports, "/claim", by=CAROL, comment_id=7001)  # GitHub delivers it again
    assert ticket(ports).work is WorkState.CLAIMED
    await say(ports, "/reopen Giving it up", by=CAROL)
    assert ticket(ports).work is WorkState.OPEN


async def test_a_command_github_failed_before_it_ran_gives_its_command_back() -> None:
    """`limits.commands_per_hour: 2`: rachel's `/publish` meets a GitHub 502 reading the issue
    twice (the delivery is retried); neither try ran, so the third runs within her budget."""
    ports = world(Rules("blob-sha-1", commands_per_hour=2))
    answered = ports.github.issue
    failures = [TransientError("GitHub answered 502"), TransientError("GitHub answered 502")]

    async def flaky_issue(installation_id: int, repository: str, number: int) -> Any:
        if failures:
            raise failures.pop()
        return await answered(installation_id, repository, number)

    ports.github.issue = flaky_issue  # type: ignore[method-assign]
    for _ in range(2):
        with pytest.raises(TransientError):
            await say(ports, "/publish", comment_id=7002)
    await say(ports, "/publish", comment_id=7002)
    assert ticket(ports).work is WorkState.OPEN
    assert await ports.budgets.spent(RACHEL[1], command_budget(REPOSITORY, 2)) == 1


async def test_an_error_after_the_command_ran_keeps_its_command_spent() -> None:
    """carol's `/claim` ran (the door committed) and then the delivery failed: the retry replays
    the outcome, and the command is counted once, not given back."""
    ports = world(Rules("blob-sha-1", commands_per_hour=2))
    await published(ports)
    counted = ports.counts.count_command

    def fail_once(*args: Any) -> None:
        ports.counts.count_command = counted  # type: ignore[method-assign]
        raise RuntimeError("the metrics went away")

    ports.counts.count_command = fail_once  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        await say(ports, "/claim", by=CAROL, comment_id=7003)
    assert ticket(ports).work is WorkState.CLAIMED
    assert await ports.budgets.spent(CAROL[1], command_budget(REPOSITORY, 2)) == 1
    await say(ports, "/claim", by=CAROL, comment_id=7003)  # the delivery retried: replayed
    assert await ports.budgets.spent(CAROL[1], command_budget(REPOSITORY, 2)) == 1


async def test_status_shows_the_status_comment_and_answers_briefly() -> None:
    """`/status` on a ticket refreshes its status comment and answers with the ticket."""
    ports = world()
    shown = await published(ports)
    before = len(ports.store.answers)
    await say(ports, "/status")
    status, reply = answers_after(ports, before)
    assert status == StatusComment(INSTALLATION, REPOSITORY, 12)
    assert isinstance(reply, Reply) and reply.message == StatusAnswer(shown)


async def test_status_on_an_issue_that_is_no_ticket_only_answers() -> None:
    """`/status` on an issue that is not a ticket says so, with no status comment."""
    ports = world()
    await say(ports, "/status")
    assert [reply.message for reply in replies(ports.store.answers)] == [StatusAnswer(None)]
    assert len(ports.store.answers) == 1


HEAD = "a" * 40


async def _lint_and_build_failed(ports: FakePorts) -> None:
    """#12 published; PR #40 links it, and on its head both `lint` and `build` failed."""
    await published(ports)
    await ports.dispatch(
        "pull_request", pull_request("opened", pull_answer(REPOSITORY, 40, body="Fixes #12", head_sha=HEAD))
    )
    await ports.dispatch(
        "check_run", check_run(HEAD, name="lint", conclusion="failure", check_id=601), delivery_id="l"
    )
    await ports.dispatch(
        "check_run", check_run(HEAD, name="build", conclusion="failure", check_id=602), delivery_id="b"
    )


@pytest.mark.parametrize(
    ("required", "named"), [(("build",), "#40: build failed"), ((), "#40: build, lint failed")]
)
async def test_the_status_reply_names_what_blocks_under_the_repositorys_required_checks(
    required: tuple[str, ...], named: str
) -> None:
    """`/status` answers under the repository's `checks.required`, as the status comment does:
    with `required: [build]` the failing `lint` is not named (only `build` holds the rail back);
    without it every failing check is."""
    ports = world(Rules("blob-sha-1", required_checks=required))
    await _lint_and_build_failed(ports)
    assert ticket(ports).rails.integration is IntegrationState.BLOCKED
    before = len(ports.store.answers)
    await say(ports, "/status")
    [reply] = replies(answers_after(ports, before))
    assert isinstance(reply.message, StatusAnswer)
    assert f"Repository: blocked ({named})" in reply_body(reply)


async def test_a_unit_that_fails_writes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A claim whose unit of work fails after executing leaves the ticket open and answers nothing."""
    ports = world()
    await published(ports)
    before = len(ports.store.answers)

    async def fail(self: MemoryUnit, *args: object) -> bool:
        raise RuntimeError("the database went away")

    monkeypatch.setattr(MemoryUnit, "record_sign_of_life", fail)
    with pytest.raises(RuntimeError):
        await say(ports, "/claim", by=CAROL)
    assert ticket(ports).work is WorkState.OPEN
    assert answers_after(ports, before) == []
    assert ports.store.sign_of_life(KEY, 1) is None


async def test_the_claimants_comment_is_a_sign_of_life() -> None:
    """Any later comment by the claimant on the issue moves the attempt's sign of life forward."""
    ports = world()
    ports.clock.now = datetime(2026, 11, 30, 10, 0, tzinfo=UTC).timestamp()  # claimed at 10:00
    await claimed(ports)
    await say(ports, "Still on it.", by=CAROL, created_at="2026-11-30T12:00:00Z")
    sign = ports.store.sign_of_life(KEY, 1)
    assert sign is not None
    assert (sign.kind, sign.at) == ("comment", datetime(2026, 11, 30, 12, 0, tzinfo=UTC))


async def test_a_command_whose_commit_landed_while_it_was_cancelled_still_spends_its_command() -> None:
    """The unit's commit is shielded: it lands though the run is cancelled meanwhile (the
    delivery's lease was lost). The command ran, so its unit stays spent, and the retry, which
    replays it, gives back only its own: one command, counted once."""
    ports = world(Rules("blob-sha-1", commands_per_hour=2))
    await published(ports)
    committing = MemoryUnit.commit
    cancelled: list[bool] = []

    async def commit_then_cancelled(self: MemoryUnit) -> None:
        await committing(self)
        if not cancelled:
            cancelled.append(True)
            raise asyncio.CancelledError

    MemoryUnit.commit = commit_then_cancelled  # type: ignore[method-assign]
    try:
        with pytest.raises(asyncio.CancelledError):
            await say(ports, "/claim", by=CAROL, comment_id=7010)
    finally:
        MemoryUnit.commit = committing  # type: ignore[method-assign]
    assert ticket(ports).work is WorkState.CLAIMED
    await say(ports, "/claim", by=CAROL, comment_id=7010)  # taken up again: replayed
    assert await ports.budgets.spent(CAROL[1], command_budget(REPOSITORY, 2)) == 1


async def test_the_budget_spent_before_the_run_is_the_judge_not_refusals_counted_since() -> None:
    """commands_per_hour: 2. Two of carol's commands hold both units while they run, and two more
    of hers, refused over the budget meanwhile, are recorded. The two running give theirs back
    (GitHub failed them before the door): carol's next `/claim` spends a unit and runs; the
    refusals recorded past the budget are not counted against it again."""
    ports = world(Rules("blob-sha-1", commands_per_hour=2))
    await published(ports)
    budget = command_budget(REPOSITORY, 2)
    for _ in range(2):
        assert await ports.budgets.spend(CAROL[1], budget) is None
    for comment_id in (7101, 7102):
        await say(ports, "/claim", by=CAROL, comment_id=comment_id)
    assert ticket(ports).work is WorkState.OPEN
    for _ in range(2):
        await ports.budgets.refund(CAROL[1], budget)
    await say(ports, "/claim", by=CAROL, comment_id=7103)
    assert ticket(ports).work is WorkState.CLAIMED


@pytest.mark.parametrize("created_at", ["yesterday", "2026-11-30T10:00:00+99:00"])
async def test_a_comment_whose_time_does_not_read_runs_nothing_and_fails_nothing(created_at: str) -> None:
    """A signed payload whose `created_at` is not a time: the claimant's `/reopen` runs nothing,
    records nothing, answers nothing, and the handler does not raise (before: a ValueError out of
    the handler, the delivery failed)."""
    ports = world()
    await claimed(ports)
    before, answered = ticket(ports).revision, len(ports.store.answers)
    await say(ports, "/reopen Giving it up.", by=CAROL, created_at=created_at)
    assert ticket(ports).revision == before and len(ports.store.answers) == answered


async def test_a_comment_time_without_an_offset_is_read_as_utc() -> None:
    """`created_at` without an offset is GitHub's UTC: the claimant's comment is a sign of life and
    its command runs (before: comparing it with aware times raised a TypeError)."""
    ports = world()
    await claimed(ports)
    await say(ports, "/reopen Giving it up.", by=CAROL, created_at="2026-11-30T12:00:00")
    assert ticket(ports).work is WorkState.OPEN
