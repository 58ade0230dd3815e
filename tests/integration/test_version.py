"""The version: from the package metadata, in `/healthz` and in the User-Agent of every GitHub call."""

from __future__ import annotations

from importlib import metadata

import httpx
import pytest
import respx

from app import version as version_module
from app.github.client import GitHubClient
from app.runtime.metrics import Metrics
from app.version import UNKNOWN_VERSION, railyard_version
from tests.fakes import GITHUB_API, StillClock, app_settings, running_server, token_response


def test_the_version_is_the_installed_package_version() -> None:
    """`railyard_version()` is what the package metadata says (pyproject's version once installed)."""
    assert railyard_version() == metadata.version("railyard") != UNKNOWN_VERSION


def test_a_checkout_that_is_not_installed_says_its_version_is_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without package metadata the version is `0+unknown`, not an exception."""

    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(version_module.metadata, "version", missing)
    assert railyard_version() == "0+unknown"


async def test_healthz_reports_the_version(tmp_path: object) -> None:
    """`GET /healthz` names the running version."""
    async with running_server(app_settings(f"sqlite:///{tmp_path}/v.db")) as server:
        async with server.client.get("/healthz") as response:
            report = await response.json()
    assert report["version"] == metadata.version("railyard")


@respx.mock
async def test_every_github_call_names_railyard_and_its_version() -> None:
    """The token request and the API call both carry `User-Agent: railyard/<version>`."""
    tokens = respx.post(f"{GITHUB_API}/app/installations/7/access_tokens").mock(
        return_value=httpx.Response(201, json=token_response("ghs_one"))
    )
    comments = respx.get(f"{GITHUB_API}/repos/acme/web/issues/12/comments").mock(
        return_value=httpx.Response(200, json=[])
    )
    github = GitHubClient(app_settings("sqlite://", GITHUB_API_URL=GITHUB_API), Metrics(), clock=StillClock())
    await github.start()
    try:
        await github.call("list_comments", 7, repository="acme/web", number=12)
    finally:
        await github.close()
    expected = f"railyard/{metadata.version('railyard')}"
    assert comments.calls.last.request.headers["User-Agent"] == expected
    assert tokens.calls.last.request.headers["User-Agent"] == expected
