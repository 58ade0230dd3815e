"""Slash-commands end to end: signed `issue_comment` webhooks built from a real payload go
into the real server; GitHub is the stand-in; the outcome is read from the database and from
what GitHub was asked to do."""

from __future__ import annotations

import asyncio
import json

import pytest

from app.store.database import Database
from app.store.queue_admin import list_deliveries, requeue
from app.store.tickets import TicketService
from github_standin import repository_id
from policies.model import TicketKey
from support.world import CONFIG, FIX, REPO, World
from tests.fakes import example


async def test_a_whole_lifecycle_runs_from_comments_with_roles_from_teams(world: World) -> None:
    """publish, claim, deliver, accept: each by someone holding the role, each acknowledged."""
    published = await world.say("rachel", "/publish")
    ticket = world.ticket()
    assert (ticket.work.value, ticket.owner) == ("open", "olivia")
    claimed = await world.say("cody", "/claim --check-in 60")
    assert world.ticket().claimant == "cody"
    assert "cody" in world.github.repositories[REPO].issues[12].assignees
    delivered = await world.say(
        "cody", "/deliver branch=agent/12-fix\nUploads now resume after a dropped connection."
    )
    delivery = world.ticket().last_delivery
    assert (delivery.commit, delivery.branch) == (FIX, "agent/12-fix")
    assert delivery.summary.startswith("Uploads now resume")
    accepted = await world.say("rita", "/accept")
    ticket = world.ticket()
    assert ticket.work.value == "accepted"
    assert (ticket.review.reviewer, ticket.review.kind.value, ticket.review.commit) == (
        "rita",
        "independent",
        FIX,
    )
    for comment_id in (published, claimed, delivered, accepted):  # the status comment says it
        assert world.reactions_to(comment_id) == []
    assert world.replies() == [] and world.status_comments() == [world.expected_status()]


async def test_a_command_without_the_role_is_refused_with_a_reply_and_changes_nothing(world: World) -> None:
    """nora holds no role: her /claim is explained and the ticket stays open."""
    await world.say("rachel", "/publish")
    await world.say("nora", "/claim")
    assert world.ticket().work.value == "open" and world.ticket().revision == 2
    [reply] = world.replies()
    assert "/claim" in reply and "Refused" in reply and "runner" in reply


async def test_a_pending_team_membership_grants_nothing(world: World) -> None:
    """Only an active membership counts: pat's invitation is still pending."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.say("cody", "/deliver branch=agent/12-fix\nDone.")
    await world.say("pat", "/accept")
    assert world.ticket().work.value == "delivered"
    assert "reviewer" in world.replies()[-1]


async def test_a_member_removed_after_commenting_is_refused_at_execution(world: World) -> None:
    """Roles are checked when the command runs, not when the comment was written."""
    await world.say("rachel", "/publish")
    del world.github.team_memberships[("acme", "product", "rachel")]
    await world.say("rachel", "/draft", number=13)
    assert world.ticket(13) is None
    assert "Refused" in world.replies(13)[-1]


async def test_when_roles_cannot_be_verified_the_command_waits_and_is_not_refused_for_good(
    world: World,
) -> None:
    """403 on team membership: a plain explanation, a retry later, never a silent yes or no."""
    await world.say("rachel", "/publish")
    world.github.installations[7].permissions.pop("members", None)
    payload = world.write("cody", "/claim", 12)
    await world.server.deliver("issue_comment", json.dumps(payload).encode(), "cannot-verify")
    await drained_or_retrying(world.database, "cannot-verify")
    await world.outbox_settled()
    assert world.ticket().work.value == "open"
    assert "cannot run this yet" in world.replies()[-1]
    world.github.installations[7].permissions["members"] = "read"
    requeue(world.database, ["cannot-verify"], 0.0)
    await world.settle()
    assert world.ticket().claimant == "cody"


async def drained_or_retrying(database: Database, delivery_id: str) -> None:
    """Wait until the delivery has been tried once (and put back for a retry)."""
    for _ in range(200):
        [stored] = [d for d in list_deliveries(database) if d["delivery_id"] == delivery_id]
        if stored["attempts"] and stored["last_error"]:
            return
        await asyncio.sleep(0.025)
    raise TimeoutError("the delivery was not tried")


async def test_an_edited_comment_never_runs_a_command(world: World) -> None:
    """Adding /accept by editing a comment does nothing."""
    await world.say("rachel", "/publish")
    await world.say("rachel", "Edited to say:\n/claim", action="edited")
    assert world.ticket().work.value == "open" and world.replies() == []


async def test_the_apps_own_comments_are_ignored(world: World) -> None:
    """A comment written by railyard (even one quoting a command) never runs."""
    await world.say("rachel", "/publish")
    await world.say("railyard[bot]", "/claim", performed_via_github_app={"id": 1, "slug": "railyard"})
    assert world.ticket().work.value == "open"


@pytest.mark.parametrize(
    "body",
    [
        "```\n/claim\n```",
        "    /claim",
        "> /claim",
        "<!-- /claim -->",
        "<!--\n/claim\n-->",
    ],
)
async def test_commands_inside_code_quotes_and_html_comments_do_nothing(world: World, body: str) -> None:
    """Only a command line outside code, quotes and HTML comments runs."""
    await world.say("rachel", "/publish")
    await world.say("cody", f"Some text first.\n\n{body}\n")
    assert world.ticket().work.value == "open" and world.replies() == []


async def test_the_same_comment_delivered_twice_runs_once(world: World) -> None:
    """Two webhook deliveries of one comment: one claim, one event, one assignment."""
    await world.say("rachel", "/publish")
    payload = world.write("cody", "/claim", 12)
    for delivery_id in ("first", "second"):
        await world.server.deliver("issue_comment", json.dumps(payload).encode(), delivery_id)
    await world.settle()
    assert world.ticket().revision == 3
    assert len(world.github.calls_to("POST", f"/repos/{REPO}/issues/12/assignees")) == 1


async def test_a_command_on_a_pull_request_applies_to_its_linked_ticket(world: World) -> None:
    """On PR #34 (Fixes #12), /deliver resolves the PR's head and moves #12."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.say("cody", "/deliver\nAll done in the PR.", number=34, pr=True)
    delivery = world.ticket().last_delivery
    assert (delivery.commit, delivery.pull_request) == (FIX, 34)


async def test_a_pull_request_linking_several_tickets_needs_one_named(world: World) -> None:
    """On PR #35 (#12 and #13), a bare /accept is refused; `/accept #12` names the ticket."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.say("cody", "/deliver branch=agent/12-fix\nDone.")
    await world.say("rita", "/accept", number=35, pr=True)
    assert world.ticket().work.value == "delivered"
    assert "links several tickets" in world.replies(35)[-1]
    await world.say("rita", "/accept #12", number=35, pr=True)
    assert world.ticket().work.value == "accepted"


async def test_help_on_an_issue_that_is_not_a_ticket_creates_nothing(world: World) -> None:
    """/help answers with the command list and leaves the issue alone."""
    await world.say("nora", "/help", number=40)
    assert world.ticket(40) is None
    [reply] = world.replies(40)
    assert "/claim" in reply and "/send-back" in reply


async def test_send_back_mentions_the_runner_and_keeps_the_claim(world: World) -> None:
    """The reviewer's feedback reaches the runner; a new attempt starts."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.say("cody", "/deliver branch=agent/12-fix\nFirst try.")
    await world.say("rita", "/send-back The upload still restarts from zero on <b>timeouts</b> @everyone")
    ticket = world.ticket()
    assert (ticket.work.value, ticket.claimant, ticket.attempt) == ("claimed", "cody", 2)
    [note] = world.replies()
    assert note.startswith("@cody") and "<b>" not in note and "@everyone" not in note


async def test_a_near_miss_gets_a_hint(world: World) -> None:
    """`/acept` is answered with the command it probably meant."""
    await world.say("rachel", "/publish")
    await world.say("rita", "/acept")
    assert "/accept" in world.replies()[-1]


async def test_delivering_a_branch_that_does_not_exist_is_refused(world: World) -> None:
    """The commit is resolved through the API; a missing branch is explained."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.say("cody", "/deliver branch=nope\nDone.")
    assert world.ticket().work.value == "claimed"
    assert "branch `nope` was not found" in world.replies()[-1]


async def test_the_ticket_label_makes_a_draft_ticket_once(world: World) -> None:
    """issues.labeled with `tickets.label` creates a draft (revision 1); relabelling adds nothing."""
    repository = world.github.repositories[REPO]
    repository.files[".github/railyard.yml"] = CONFIG + "tickets:\n  label: railyard\n"
    payload = json.loads(example("api.github.com", "issues", "10-labeled.json"))
    payload["installation"] = {"id": 7}
    payload["repository"]["full_name"] = REPO
    payload["repository"]["id"] = repository_id(REPO)
    payload["issue"]["number"] = 13
    payload["issue"]["labels"] = [{"name": "bug"}]
    await world.server.deliver("issues", json.dumps(payload).encode())
    await world.settle()
    assert world.ticket(13) is None
    payload["issue"]["labels"] = [{"name": "bug"}, {"name": "railyard"}]
    for _ in range(2):
        await world.server.deliver("issues", json.dumps(payload).encode())
    await world.settle()
    ticket = world.ticket(13)
    assert (ticket.work.value, ticket.revision) == ("draft", 1)


async def delivered(world: World) -> None:
    """#12 published by rachel, claimed and delivered by cody."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.say("cody", "/deliver branch=agent/12-fix\nDone.")


async def test_draft_then_publish_by_a_requester(world: World) -> None:
    """/draft makes a draft ticket; /publish opens it."""
    await world.say("rachel", "/draft")
    assert world.ticket().work.value == "draft"
    await world.say("rachel", "/publish")
    assert world.ticket().work.value == "open"


async def test_a_maintainer_override_is_recorded_as_an_override(world: World) -> None:
    """`/accept --override REASON` by a maintainer: accepted, recorded as an override, not a review."""
    await delivered(world)
    await world.say("max", "/accept --override Hotfix verified in staging")
    review = world.ticket().review
    assert (review.kind.value, review.reviewer, review.reason) == (
        "override",
        "max",
        "Hotfix verified in staging",
    )


async def test_self_verification_needs_the_runner_to_hold_reviewer(world: World) -> None:
    """cody is no reviewer: --self is refused; once he is one, it is recorded as self-verified."""
    await delivered(world)
    await world.say("cody", "/accept --self")
    assert world.ticket().work.value == "delivered"
    world.github.team_memberships[("acme", "reviewers", "cody")] = "active"
    await world.say("cody", "/accept --self")
    assert world.ticket().review.kind.value == "self_verified"


async def test_self_verification_is_refused_on_a_high_risk_ticket(world: World) -> None:
    """The risk:high label, read when the command runs, demands an independent review."""
    world.github.team_memberships[("acme", "reviewers", "cody")] = "active"
    await delivered(world)
    world.github.repositories[REPO].issues[12].labels.append("risk:high")
    await world.say("cody", "/accept --self")
    assert world.ticket().work.value == "delivered"
    assert "high-risk" in world.replies()[-1]


@pytest.mark.parametrize(
    ("who", "relation"), [("rita", "reviewer"), ("olivia", "owner"), ("cody", "claimant")]
)
async def test_reopen_from_delivered_by_reviewer_owner_or_claimant(
    world: World, who: str, relation: str
) -> None:
    """The claim is cleared and the role or relation used is recorded."""
    await delivered(world)
    await world.say(who, "/reopen The approach needs a rethink")
    ticket = world.ticket()
    assert (ticket.work.value, ticket.claimant) == ("open", None)
    last = TicketService(world.database).history(TicketKey(REPO, 12))[-1].event
    assert (last.type.value, last.role) == ("reopened", relation)


async def test_reopen_unassigns_the_previous_claimant_and_tells_them_why_once(world: World) -> None:
    """rita reopens cody's delivery: GitHub no longer shows cody assigned, one reply mentions him
    with the reason quoted; the same webhook delivered again unassigns and replies no more."""
    await delivered(world)
    assert "cody" in world.github.repositories[REPO].issues[12].assignees
    payload = world.write("rita", "/reopen Wrong approach <b>really</b> @everyone", 12)
    for delivery_id in ("reopen-first", "reopen-again"):
        await world.server.deliver("issue_comment", json.dumps(payload).encode(), delivery_id)
        await world.settle()
    assert "cody" not in world.github.repositories[REPO].issues[12].assignees
    assert len(world.github.calls_to("DELETE", f"/repos/{REPO}/issues/12/assignees")) == 1
    [note] = world.replies()
    assert note.startswith("@cody: @rita reopened") and "Wrong approach" in note
    assert "<b>" not in note and "@everyone" not in note and "/claim" in note
    assert world.status_comments() == [world.expected_status()]


async def test_a_claimant_giving_the_work_up_is_unassigned_without_being_mentioned(world: World) -> None:
    """cody releases his own claim: he is unassigned; the reply names him without a mention."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.say("cody", "/reopen Out of my depth here")
    assert "cody" not in world.github.repositories[REPO].issues[12].assignees
    [note] = world.replies()
    assert "@cody" not in note and "Out of my depth here" in note


async def test_reopen_after_acceptance_is_for_the_owner_or_a_maintainer(world: World) -> None:
    """rita (reviewer) cannot reopen an accepted ticket; olivia (owner) can."""
    await delivered(world)
    await world.say("rita", "/accept")
    await world.say("rita", "/reopen Regression found")
    assert world.ticket().work.value == "accepted"
    await world.say("olivia", "/reopen Regression found in production")
    assert world.ticket().work.value == "open"


async def test_a_decision_written_before_the_current_delivery_is_stale(world: World) -> None:
    """rita's /accept was written before cody's /deliver comment: refused as stale."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    early = world.write("rita", "/accept")
    early["comment"]["created_at"] = "2020-01-01T00:00:00Z"
    await world.say("cody", "/deliver branch=agent/12-fix\nDone.")
    await world.server.deliver("issue_comment", json.dumps(early).encode())
    await world.settle()
    assert world.ticket().work.value == "delivered"
    assert "written before" in world.replies()[-1]


async def test_the_command_budget_is_enforced_per_actor(world: World) -> None:
    """limits.commands_per_hour: 2 — the third state-changing command in an hour is refused."""
    world.github.repositories[REPO].files[".github/railyard.yml"] = (
        CONFIG + "limits:\n  commands_per_hour: 2\n"
    )
    await world.say("rachel", "/draft")
    await world.say("rachel", "/publish")
    await world.say("rachel", "/draft", number=13)
    assert world.ticket(13) is None
    assert "limit is 2" in world.replies(13)[-1]


async def test_comments_on_eight_issues_arriving_together_run_no_more_commands_than_the_budget(
    world: World,
) -> None:
    """limits.commands_per_hour: 2 — eight `/draft` comments by one person on eight issues,
    delivered at once and handled concurrently, draft two tickets; the rest are refused with the
    limit (told so within the reply limit)."""
    world.github.repositories[REPO].files[".github/railyard.yml"] = (
        CONFIG + "limits:\n  commands_per_hour: 2\n"
    )
    numbers = range(101, 109)
    for number in numbers:
        world.github.add_issue(REPO, number, body=f"issue {number}")
    payloads = [json.dumps(world.write("rachel", "/draft", number)).encode() for number in numbers]
    responses = await asyncio.gather(*(world.server.deliver("issue_comment", p) for p in payloads))
    assert [r.status for r in responses] == [202] * 8
    await world.settle()
    drafted = [n for n in numbers if world.ticket(n) is not None]
    assert len(drafted) == 2, drafted
    told = [reply for n in numbers if n not in drafted for reply in world.replies(n)]
    assert told and all("limit is 2" in reply for reply in told)  # within the reply limit


async def test_repeated_refusals_fall_back_to_one_reaction_then_silence(world: World) -> None:
    """A public repository cannot make the app a spam cannon: a few replies, one reaction, then nothing."""
    await world.say("rachel", "/publish")
    ids = [await world.say("nora", "/claim") for _ in range(6)]
    assert len(world.replies()) <= 4
    assert world.reactions_to(ids[3]) == ["confused"]
    assert [world.reactions_to(i) for i in ids[4:]] == [[], []]


async def test_thirty_comments_by_an_outsider_cost_the_installation_a_handful_of_writes(world: World) -> None:
    """Over the reply limit, further comments cost no content write: 30 refused comments, at most 4 writes."""
    await world.say("rachel", "/publish")
    before = len(world.github.calls)
    for _ in range(30):
        await world.say("nora", "/claim")
    writes = [c for c in world.github.calls[before:] if c.content_write]
    assert len(writes) <= 4, [(c.method, c.path) for c in writes]


async def test_a_pull_request_from_the_delivered_branch_links_the_ticket(world: World) -> None:
    """A PR whose body links nothing is still linked by its head branch, once a delivery reported it."""
    world.github.add_pull(REPO, 36, body="No keywords here", head_ref="agent/12-fix", head_sha=FIX)
    await delivered(world)
    await world.say("rita", "/accept", number=36, pr=True)
    assert world.ticket().work.value == "accepted"


async def test_a_config_file_that_does_not_parse_refuses_commands_until_fixed(world: World) -> None:
    """A broken .github/railyard.yml is reported on the next command, and the command is refused."""
    world.github.repositories[REPO].files[".github/railyard.yml"] = "roles:\n  runnr: []\n"
    await world.say("rachel", "/publish")
    assert world.ticket() is None
    assert "runnr" in world.replies()[-1]


async def test_a_bot_acts_only_when_a_role_names_it_by_login(world: World) -> None:
    """coder-bot[bot] is named as a runner and may claim; another bot is ignored without a reply."""
    await world.say("rachel", "/publish")
    await world.say("other-bot[bot]", "/claim")
    assert world.ticket().work.value == "open" and world.replies() == []
    await world.say("coder-bot[bot]", "/claim")
    assert world.ticket().claimant == "coder-bot[bot]"


async def test_a_new_delivery_after_acceptance_must_be_new_work(world: World) -> None:
    """After acceptance the last claimant may deliver again, but only a new commit counts as progress."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.say("cody", "/deliver branch=agent/12-fix\nFirst.")
    await world.say("rita", "/accept")
    await world.say("cody", "/deliver branch=agent/12-fix\nSame commit, new words.")
    assert world.ticket().work.value == "accepted"
    assert "not progress" in world.replies()[-1]
    world.github.repositories[REPO].branches["agent/12-fix"] = "a" * 40
    await world.say("cody", "/deliver branch=agent/12-fix\nA follow-up fix.")
    ticket = world.ticket()
    assert (ticket.work.value, ticket.attempt, ticket.last_delivery.commit) == ("delivered", 2, "a" * 40)
