"""Fixtures for the end-to-end tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.store.database import Database
from tests.e2e.world import World, standin_state
from tests.fakes import app_settings, running_server
from tests.github_standin import running_standin


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    """A configured server talking to the stand-in."""
    state = standin_state()
    async with running_standin(state) as standin:
        url = f"sqlite:///{tmp_path}/railyard.db"
        settings = app_settings(url, GITHUB_API_URL=standin.url, APP_ID="1")
        async with running_server(settings, outbox_spacing=0.0) as server:
            yield World(server, state, Database(url))
