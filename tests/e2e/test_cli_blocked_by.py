"""`railyard status --json` and `railyard tickets --json` judge `blocked_by` under the repository's
`checks.required`, as the status comment and the HTTP API do (SPEC *Agent interface*: the status
comment's hidden line is the `status --json` object): the command line reads the configuration
through the app's credentials and the shared HTTP cache; without them, the defaults, said on stderr."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from app.cli import main
from app.settings import Settings
from app.store.database import Database
from app.views.status_json import parse_status_line
from github_standin import running_standin
from support.world import CONFIG, REPO, World, standin_state
from tests.e2e.test_api_blocked_by import LINT_FAILED, lint_fails_build_passes
from tests.fakes import app_settings, running_server

REQUIRED_BUILD = CONFIG + "checks:\n  required: [build]\n"


@pytest.fixture
async def configured(tmp_path: Path) -> AsyncIterator[tuple[World, Settings]]:
    """The server on the stand-in, and the settings a command line beside it runs with."""
    state = standin_state()
    async with running_standin(state) as standin:
        url = f"sqlite:///{tmp_path}/railyard.db"
        settings = app_settings(url, GITHUB_API_URL=standin.url, APP_ID="1")
        async with running_server(settings) as server:
            yield World(server, state, Database(url)), settings


async def cli(settings: Settings | None, *argv: str) -> tuple[int, Any, str]:
    """The command line in a thread of its own (it runs its own event loop): exit code, the JSON
    it printed, its stderr."""
    out, err = io.StringIO(), io.StringIO()
    code = await asyncio.to_thread(main, list(argv), settings=settings, out=out, err=err)
    return code, json.loads(out.getvalue()) if code == 0 else None, err.getvalue()


@pytest.mark.parametrize(
    ("config", "blocked_by"),
    [(REQUIRED_BUILD, []), (CONFIG, LINT_FAILED)],
    ids=["required-build", "every-check"],
)
async def test_the_command_line_names_only_checks_the_repository_requires(
    configured: tuple[World, Settings], config: str, blocked_by: list[Any]
) -> None:
    """`checks.required: [build]`, `lint` failed and `build` passed on the PR's head: `status
    --json` and `tickets --json` say `blocked_by: []`, as the status comment's hidden line does;
    without `checks.required`, `lint` blocks in all three."""
    world, settings = configured
    await lint_fails_build_passes(world, config)
    await world.outbox_settled()
    code, status, err = await cli(settings, "status", f"{REPO}#12", "--json")
    assert code == 0 and status["blocked_by"] == blocked_by and err == ""
    code, listed, err = await cli(settings, "tickets", "--json")
    assert code == 0 and [item["blocked_by"] for item in listed] == [blocked_by] and err == ""
    [comment] = world.status_comments()
    shown = parse_status_line(comment)  # the status comment's hidden line
    assert shown is not None and shown["blocked_by"] == blocked_by


async def test_without_credentials_the_defaults_count_and_stderr_says_so(
    configured: tuple[World, Settings],
) -> None:
    """A command line without the app's credentials cannot read the file: every failing check
    counts, and stderr (never stdout, which holds the JSON) says so."""
    world, settings = configured
    await lint_fails_build_passes(world, REQUIRED_BUILD)
    offline = Settings(DATABASE_URL=settings.database_url)
    code, status, err = await cli(offline, "status", f"{REPO}#12", "--json")
    assert code == 0 and status["blocked_by"] == LINT_FAILED
    assert "default checks" in err and "no app credentials" in err


async def test_a_github_that_never_answers_holds_the_command_line_no_longer_than_its_deadline(
    configured: tuple[World, Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    """GitHub accepts the connection and never answers (each call would wait the client's 15 s,
    repository after repository): `status --json` prints its JSON by the deadline (2 s here),
    under the defaults, and stderr names the repository whose file was not read."""
    import socket
    import time

    from app.cli import rail_policies

    world, settings = configured
    await lint_fails_build_passes(world, REQUIRED_BUILD)
    await world.outbox_settled()
    monkeypatch.setattr(rail_policies, "READ_DEADLINE", 2.0, raising=False)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        unanswered = settings.model_copy(
            update={"github_api_url": f"http://127.0.0.1:{silent.getsockname()[1]}"}
        )
        started = time.monotonic()
        code, status, err = await cli(unanswered, "status", f"{REPO}#12", "--json")
        waited = time.monotonic() - started
    assert code == 0 and status["blocked_by"] == LINT_FAILED
    assert f"for {REPO}: its configuration could not be read now" in err
    assert waited < 10, f"waited {waited:.1f} s"


async def test_a_file_that_cannot_be_used_is_said_on_stderr(configured: tuple[World, Settings]) -> None:
    """The repository's file broke after the facts arrived: the defaults are in force (as the
    server shows them: every failing check counts), and stderr says the file cannot be used."""
    world, settings = configured
    await lint_fails_build_passes(world, REQUIRED_BUILD)
    world.github.repositories[REPO].files[".github/railyard.yml"] = "checks:\n  required: [build\n"
    code, status, err = await cli(settings, "status", f"{REPO}#12", "--json")
    assert code == 0 and status["blocked_by"] == LINT_FAILED
    assert "cannot be used" in err and REPO in err
