"""What a process imports before it does its job: `railyard --help`, an agent's workflow step
and a config check load no database, server or GitHub client; the intake's writer process, started
with every `railyard serve` on SQLite, loads neither the tables' models nor the settings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("sqlalchemy", "sqlmodel", "aiohttp", "githubkit", "pydantic_settings", "app.bootstrap", "app.store")


def _run(script: str, names: tuple[str, ...]) -> tuple[set[str], list[str]]:
    """Which of `names` (packages, modules) a fresh interpreter has imported once `script` ran,
    and the lines it printed before."""
    wanted = f"{{m for m in sys.modules for h in {names!r} if m == h or m.startswith(h + '.')}}"
    script += f"\nimport json, sys\nprint(json.dumps(sorted({wanted})))\n"
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    *printed, loaded = result.stdout.strip().splitlines()
    return set(json.loads(loaded)), printed


def _loaded(script: str, names: tuple[str, ...]) -> set[str]:
    return _run(script, names)[0]


def _imported(*argv: str, status: int = 0) -> set[str]:
    """The heavy packages loaded once `railyard ARGV` has run, having exited with `status` (a
    usage error would exit before the command's own code ran)."""
    script = (
        "from app.cli import main\n"
        f"try:\n    status = main({list(argv)!r})\nexcept SystemExit as exited:\n    status = exited.code\n"
        "print('exit status', status)"
    )
    loaded, printed = _run(script, HEAVY)
    assert printed[-1] == f"exit status {status}", printed
    return loaded


@pytest.mark.process
def test_help_and_version_import_nothing_heavy() -> None:
    assert _imported("--help") == set()
    assert _imported("--version") == set()


@pytest.mark.process
def test_an_agents_step_imports_neither_the_server_nor_the_database() -> None:
    assert _imported("agent", "claim", "--help") == set()
    # A real run that fails on its inputs goes through the command itself.
    assert _imported("agent", "claim", "--issue", "1", "--repo", "not a repo", status=2) == set()


@pytest.mark.process
def test_validate_imports_neither_the_server_nor_the_database(tmp_path: Path) -> None:
    config = tmp_path / "railyard.yml"
    config.write_text("checks:\n  required: []\n")
    assert _imported("validate", str(config)) == set()


@pytest.mark.process
def test_a_database_command_still_loads_what_it_needs() -> None:
    assert {"sqlalchemy", "app.store"} <= _imported("status", "--help")


@pytest.mark.process
def test_the_intake_writer_process_loads_no_models_and_no_settings() -> None:
    loaded = _loaded(
        "import app.store.intake_child", ("sqlmodel", "pydantic", "app.settings", "aiohttp", "githubkit")
    )
    assert loaded == set()
