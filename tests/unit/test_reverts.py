"""Reverts in the pure core: which PRs a revert names, and `reverted` on the ticket it undoes."""

from __future__ import annotations

from datetime import timedelta

from policies.attention import RecordFacts, attention
from policies.events import EventType
from policies.notices import NoticeContext, decide_notice
from policies.rails import PullRequestObserved
from policies.reverts import RevertObserved, reverted_commits, reverted_pulls
from policies.states import IntegrationState, WorkState
from tests.fakes import START, Story

REPO = "acme/app"


def merged(number: int = 34) -> PullRequestObserved:
    """PR `number` merged while it linked the ticket."""
    return PullRequestObserved(
        number, f"https://github.com/{REPO}/pull/{number}", True, False, True, "a1b2c3d4e5f6",
        "agent/12-retries", "f00dfeedbeef" * 3 + "f00d", START + timedelta(minutes=40), linked_at_merge=True,
    )  # fmt: skip


def accepted_and_merged() -> Story:
    """Ticket #12 accepted, its PR #34 merged."""
    return Story().walk_to(WorkState.ACCEPTED).observe(merged())


def test_github_revert_body_names_the_reverted_pull_request() -> None:
    """GitHub's revert button writes `Reverts owner/repo#N`; the short `Reverts #N` counts too."""
    assert reverted_pulls("Reverts acme/app#34", REPO) == {34}
    assert reverted_pulls("Reverts ACME/App#34\n\nBroke the build.", REPO) == {34}
    assert reverted_pulls("reverts #34 and Reverts #35", REPO) == {34, 35}


def test_a_revert_of_another_repository_or_in_code_names_nothing() -> None:
    """Another repository's PR, a code span, a fenced block or an HTML comment name nothing here."""
    assert reverted_pulls("Reverts other/repo#3", REPO) == frozenset()
    assert reverted_pulls("Use `Reverts acme/app#34` to say so", REPO) == frozenset()
    assert reverted_pulls("```\nReverts acme/app#34\n```", REPO) == frozenset()
    assert reverted_pulls("<!-- Reverts acme/app#34 -->", REPO) == frozenset()
    assert reverted_pulls("This reverts nothing: #34", REPO) == frozenset()


def test_git_revert_message_names_the_reverted_commit() -> None:
    """`git revert` writes `This reverts commit <sha>.`; only full shas count."""
    sha = "0123456789abcdef0123456789abcdef01234567"
    message = f'Revert "Cap retries"\n\nThis reverts commit {sha}.\nThis reverts commit abc123.'
    assert reverted_commits(message) == (sha,)
    assert reverted_commits(None) == ()


def test_a_merged_revert_records_reverted_and_leaves_both_rails() -> None:
    """An accepted, merged ticket reverted by #40 stays accepted and merged, flagged `reverted`."""
    story = accepted_and_merged().notice(RevertObserved(reverts=34, by=40))
    ticket = story.ticket
    assert story.events[-1].type is EventType.REVERTED
    assert story.events[-1].data["pull_request"] == 34 and story.events[-1].data["reverted_by"] == 40
    assert ticket.work is WorkState.ACCEPTED
    assert ticket.rails.integration is IntegrationState.MERGED
    assert ticket.reverts == ((34, 40),)
    assert "reverted" in attention(ticket, RecordFacts(), START + timedelta(days=1))


def test_the_same_revert_twice_records_it_once() -> None:
    """A redelivered revert (or the same one found by body and by commit) records nothing more."""
    story = accepted_and_merged().notice(RevertObserved(reverts=34, by=40))
    ctx = NoticeContext("rachel", "again", START + timedelta(hours=2))
    assert decide_notice(story.ticket, RevertObserved(reverts=34, by=40), ctx) == ()


def test_a_revert_of_a_pull_request_that_never_merged_the_ticket_records_nothing() -> None:
    """Reverting a PR the ticket never merged through (or an open one) is not this ticket's revert."""
    story = Story().walk_to(WorkState.ACCEPTED)
    ctx = NoticeContext("rachel", "op", START + timedelta(hours=2))
    assert decide_notice(story.ticket, RevertObserved(reverts=34, by=40), ctx) == ()
    assert "reverted" not in attention(story.ticket, RecordFacts(), START + timedelta(days=1))
