"""`merge_group` events through the handlers and the in-memory fakes."""

from __future__ import annotations

from handlers.answers import CheckRun
from tests.fakes.webhooks import INSTALLATION, REPOSITORY, merge_group
from tests.unit.handlers.steps import world

QUEUED = "9" * 40


async def test_the_merge_queue_commit_gets_the_check_of_the_pull_request_it_names() -> None:
    """A merge-queue commit gets railyard's check, judged by the PR its queue branch names."""
    ports = world()
    await ports.dispatch("merge_group", merge_group(QUEUED, f"gh-readonly-queue/main/pr-34-{'a' * 40}"))
    assert ports.store.answers == [CheckRun(INSTALLATION, REPOSITORY, 34, QUEUED, merge_group=True)]


async def test_a_queue_branch_that_names_no_pull_request_gets_nothing() -> None:
    """A merge-group branch railyard cannot read a PR number from gets no check."""
    ports = world()
    await ports.dispatch("merge_group", merge_group(QUEUED, "some/other-branch"))
    assert ports.store.answers == []
