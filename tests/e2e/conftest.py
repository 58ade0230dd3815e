"""Fixtures for the end-to-end tests."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from app.store.database import Database
from github_standin import running_standin
from support.windows import HOUR_TURN_SECONDS, window_left
from support.world import World, standin_state
from tests.fakes import app_settings, running_server


@pytest.fixture(autouse=True)
def _clear_of_an_hours_end() -> None:
    """Hourly budgets (commands, role-less requests, lookups) count in clock hours: a test near an
    hour's end waits for it to turn (at most HOUR_TURN_SECONDS, about once a CI run per worker)."""
    if (left := window_left(3600.0)) < HOUR_TURN_SECONDS:
        time.sleep(left + 0.05)


@pytest.fixture
async def world(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[World]:
    """A configured server talking to the stand-in. Its intake is written on a thread, or by the
    writer process (railyard's default on SQLite) when a test parametrizes `world` indirectly
    with "process"."""
    state = standin_state()
    async with running_standin(state) as standin:
        url = f"sqlite:///{tmp_path}/railyard.db"
        writer = getattr(request, "param", "thread")
        settings = app_settings(url, GITHUB_API_URL=standin.url, APP_ID="1", INTAKE_WRITER=writer)
        async with running_server(settings) as server:
            yield World(server, state, Database(url))


def missing(reason: str) -> None:
    """Skip for `reason`, or fail when the browser is required (CI)."""
    if os.environ.get("RAILYARD_REQUIRE_BROWSER") == "1":
        pytest.fail(f"RAILYARD_REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    """Headless chromium from the system (playwright's own browser download is never used)."""
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        missing("chromium is not installed (apt-get install -y chromium)")
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        missing("the playwright package is not installed (pip install -e '.[dev]')")
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=executable, headless=True)
        try:
            yield launched
        finally:
            await launched.close()
