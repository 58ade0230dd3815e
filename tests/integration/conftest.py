"""Fixtures shared by the integration tests that talk to GitHub through respx."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import respx

from app.github.client import GitHubClient
from tests.fakes import started_client, token_route


@pytest.fixture
async def github() -> AsyncIterator[GitHubClient]:
    """A started client against respx, its token request answered."""
    async with started_client() as client:
        with respx.mock:
            token_route()
            yield client
