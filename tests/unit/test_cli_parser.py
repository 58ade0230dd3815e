"""The `railyard` command line loads only the command it runs (`tests/unit/test_start_imports.py`
says what each loads): the list in `--help` and each command's arguments are the same either way."""

from __future__ import annotations

import argparse

import pytest

from app.cli import COMMANDS, build_parser


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


@pytest.mark.parametrize(
    "argv",
    [
        ["--debug", "agent", "claim", "--issue", "3", "--repo", "o/r"],
        ["agent", "deliver", "--issue", "3", "--summary", "done"],
        ["audit", "export", "--repo", "o/r"],
        ["worker", "--concurrency", "2"],
        ["events", "o/r#3", "--json"],
    ],
)
def test_a_command_line_of_several_words_parses_as_in_full(argv: list[str]) -> None:
    assert vars(build_parser(argv).parse_args(argv)) == vars(build_parser().parse_args(argv))
