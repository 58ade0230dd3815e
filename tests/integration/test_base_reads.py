"""The reads behind "the base moves", through the app's own client against the GitHub stand-in:
mergeability GitHub computes only after it is asked."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from app.github.reads import GitHubReadsAdapter
from github_standin import StandinState
from github_standin.pull_lists import move_base
from support.world import REPO, standin_state
from tests.integration.standin_reads import reads_over


@pytest.fixture
async def standin() -> AsyncIterator[tuple[GitHubReadsAdapter, StandinState]]:
    """The adapter over a client talking to the e2e stand-in state (PRs #34 and #35 into main)."""
    state = standin_state()
    state.add_pull(REPO, 36, base_ref="release", head_ref="hotfix")
    async with reads_over(state) as reads:
        yield reads, state


async def test_after_the_base_moves_mergeability_is_null_until_github_has_computed_it(
    standin: tuple[GitHubReadsAdapter, StandinState],
) -> None:
    """The first read after the base moved answers `null` (`unknown`); the next one the conflict."""
    reads, state = standin
    assert move_base(state, REPO, "main", "2" * 40, conflicting=[34]) == [34, 35]
    first = await reads.pull(7, REPO, 34)
    assert (first["mergeable"], first["mergeable_state"]) == (None, "unknown")
    again = await reads.pull(7, REPO, 34)
    assert (again["mergeable"], again["mergeable_state"]) == (False, "dirty")
    other = [await reads.pull(7, REPO, 35) for _ in range(2)]
    assert [pull["mergeable"] for pull in other] == [None, True]
