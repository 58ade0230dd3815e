"""The handlers' GitHub reads over a real client talking to a running GitHub stand-in."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from app.github.client import GitHubClient
from app.github.reads import GitHubReadsAdapter
from app.runtime.metrics import Metrics
from github_standin import StandinState, running_standin
from tests.fakes import app_settings


@asynccontextmanager
async def client_over(state: StandinState, **options: Any) -> AsyncIterator[GitHubClient]:
    """A started client (`options` to `GitHubClient`) whose API is a stand-in serving `state`."""
    async with running_standin(state) as running:
        client = GitHubClient(app_settings("sqlite://", GITHUB_API_URL=running.url), Metrics(), **options)
        await client.start()
        try:
            yield client
        finally:
            await client.close()


@asynccontextmanager
async def reads_over(state: StandinState) -> AsyncIterator[GitHubReadsAdapter]:
    """`GitHubReadsAdapter` over a started client whose API is a stand-in serving `state`."""
    async with client_over(state) as client:
        yield GitHubReadsAdapter(client)
