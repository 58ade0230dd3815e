"""A repository's name asked by its id through the GitHub API (respx): what the webhook guard
takes for a repository out of the installation's reach."""

from __future__ import annotations

import httpx
import pytest
import respx

from app.github.api_errors import GitHubUnavailable
from app.github.client import GitHubClient
from app.github.reads import GitHubReadsAdapter
from handlers.errors import Missing
from tests.fakes import GITHUB_API

BY_ID = f"{GITHUB_API}/repositories/55"


async def test_the_name_now_is_read_by_id(github: GitHubClient) -> None:
    respx.get(BY_ID).mock(return_value=httpx.Response(200, json={"id": 55, "full_name": "acme/site"}))
    assert await GitHubReadsAdapter(github).repository_name(7, 55) == "acme/site"


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (404, "Not Found"),
        (403, "Resource not accessible by integration"),
        (451, "Repository access blocked"),
    ],
)
async def test_a_repository_gone_or_out_of_reach_is_missing(
    github: GitHubClient, status: int, message: str
) -> None:
    """404, a 403 that is no rate limit and a 451 (access blocked) all say the installation cannot
    reach the id: the guard leaves such a holder out of a chain of names, as the outbox does,
    instead of failing the delivery for good."""
    respx.get(BY_ID).mock(return_value=httpx.Response(status, json={"message": message}))
    with pytest.raises(Missing):
        await GitHubReadsAdapter(github).repository_name(7, 55)


async def test_github_failing_is_not_taken_for_a_repository_gone(github: GitHubClient) -> None:
    """A 502 is GitHub failing, not an answer about the repository: the delivery is tried again."""
    respx.get(BY_ID).mock(return_value=httpx.Response(502, json={"message": "Bad Gateway"}))
    with pytest.raises(GitHubUnavailable):
        await GitHubReadsAdapter(github).repository_name(7, 55)
