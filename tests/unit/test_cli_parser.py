"""The `railyard` command line loads only the command it runs: the list in `--help` is the same
either way, and an agent's step or a config check never imports the server or the database."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("sqlalchemy", "sqlmodel", "aiohttp", "githubkit", "pydantic_settings", "app.bootstrap", "app.store")


def _listed(parser: argparse.ArgumentParser) -> list[tuple[str, str | None]]:
    """The commands `railyard --help` lists, with their lines."""
    actions = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [(choice.dest, choice.help) for choice in actions._choices_actions]


def test_every_command_is_listed_with_its_line() -> None:
    listed = _listed(build_parser())
    assert listed == [(name, line) for name, _, line in COMMANDS]


@pytest.mark.parametrize("name", [name for name, _, _ in COMMANDS])
def test_the_list_is_the_same_when_only_one_command_is_loaded(name: str) -> None:
    assert _listed(build_parser([name])) == _listed(build_parser())


@pytest.mark.parametrize("name", [name for name, _, _ in COMMANDS])
def test_a_command_loaded_alone_takes_the_arguments_it_takes_in_full(name: str) -> None:
    def arguments(parser: argparse.ArgumentParser) -> list[list[str]]:
        actions = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return [action.option_strings or [action.dest] for action in actions.choices[name]._actions]

    assert arguments(build_parser(["--debug", name])) == arguments(build_parser())


def test_an_unknown_command_is_still_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser(["bogus"]).parse_args(["bogus"])
    assert exited.value.code == 2
    assert "invalid choice: 'bogus'" in capsys.readouterr().err


def _imported(tmp_path: Path, *argv: str) -> set[str]:
    """The heavy packages a fresh interpreter has imported once `railyard ARGV` has run."""
    script = (
        "import sys\n"
        "from app.cli import main\n"
        f"try:\n    main({list(argv)!r})\nexcept SystemExit:\n    pass\n"
        f"print(sorted({{m for m in sys.modules for h in {HEAVY!r} if m == h or m.startswith(h + '.')}}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    return set(eval(result.stdout.strip().splitlines()[-1]))  # noqa: S307 - our own list of names


@pytest.mark.process
def test_help_and_version_import_nothing_heavy(tmp_path: Path) -> None:
    assert _imported(tmp_path, "--help") == set()
    assert _imported(tmp_path, "--version") == set()


@pytest.mark.process
def test_an_agents_step_imports_neither_the_server_nor_the_database(tmp_path: Path) -> None:
    assert _imported(tmp_path, "agent", "claim", "--help") == set()
    # A real run that fails on its inputs goes through the command itself.
    assert _imported(tmp_path, "agent", "claim", "--issue", "1", "--repo", "not a repo") == set()


@pytest.mark.process
def test_validate_imports_neither_the_server_nor_the_database(tmp_path: Path) -> None:
    config = tmp_path / "railyard.yml"
    config.write_text("checks:\n  required: []\n")
    assert _imported(tmp_path, "validate", str(config)) == set()


@pytest.mark.process
def test_a_database_command_still_loads_what_it_needs(tmp_path: Path) -> None:
    assert {"sqlalchemy", "app.store"} <= _imported(tmp_path, "status", "--help")
