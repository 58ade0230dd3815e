"""`railyard validate [PATH]`: the server's parser on a file, its messages with lines, exit 0/1/2,
without settings or a database."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import main
from app.github.config import ConfigError, parse_repository_config
from app.github.config_schema import schema_text
from tests.unit.spec_config import SPEC_EXAMPLE

BROKEN = "tickets:\n  lable: ready\nclaims:\n  max_silence_minutes: 0\n"


def validate(*argv: str) -> tuple[int, str, str]:
    """Run `railyard validate` in-process; exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    status = main(["validate", *argv], out=out, err=err)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(autouse=True)
def unusable_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings that cannot load and a database that cannot open: validate needs neither."""
    monkeypatch.setenv("PORT", "notaport")
    monkeypatch.setenv("DATABASE_URL", "notaurl")


def test_spec_example_is_valid_with_a_one_line_summary(tmp_path: Path) -> None:
    """SPEC's example exits 0 and prints one OK line naming the policy it puts in force."""
    path = tmp_path / "railyard.yml"
    path.write_text(SPEC_EXAMPLE)

    status, out, err = validate(str(path))

    assert (status, err) == (0, "")
    assert out.count("\n") == 1 and out.startswith(f"{path}: OK · roles requester 1")
    assert "runner 2" in out and "claims silent after 240 min" in out and "environments production" in out
    assert "acceptances expire after 30 days · acceptance CI record · accepted by people · agents 1" in out


def test_an_unknown_key_fails_naming_it_with_its_line_and_a_suggestion(tmp_path: Path) -> None:
    """A broken file exits 1 and prints each of the server's messages, with lines and did-you-mean."""
    path = tmp_path / "railyard.yml"
    path.write_text(BROKEN)

    status, out, _ = validate(str(path))

    assert status == 1
    assert out.splitlines() == [
        f"{path}: 2 problems",
        f"{path}: line 2: unknown key: tickets.lable (did you mean label?)",
        f"{path}: line 4: claims.max_silence_minutes: must be greater than 0, got 0",
    ]


def test_the_messages_are_the_servers_own(tmp_path: Path) -> None:
    """What validate prints after the path is exactly the ConfigError the server reports."""
    path = tmp_path / "railyard.yml"
    path.write_text("roles:\n  runnr: []\nlimits: {commands_per_hour: lots}\n")
    with pytest.raises(ConfigError) as caught:
        parse_repository_config(path.read_text())

    _, out, _ = validate(str(path))

    assert [
        line.removeprefix(f"{path}: ") for line in out.splitlines()[1:]
    ] == caught.value.message.splitlines()


def test_the_default_path_is_the_repositorys_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without PATH it reads .github/railyard.yml under the current directory."""
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "railyard.yml").write_text("self_verifcation: never\n")
    monkeypatch.chdir(tmp_path)

    status, out, _ = validate()

    assert status == 1
    assert "line 1: unknown key: self_verifcation (did you mean self_verification?)" in out


@pytest.mark.parametrize("where", ["missing.yml", "."])
def test_a_missing_or_unreadable_file_is_a_usage_error(tmp_path: Path, where: str) -> None:
    """A file that is not there (or a directory) exits 2 with one clear line, no traceback."""
    status, out, err = validate(str(tmp_path / where))

    assert (status, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("railyard: ") and "Traceback" not in err


def test_schema_prints_the_shipped_schema() -> None:
    """`validate --schema` prints railyard.schema.json's text."""
    status, out, _ = validate("--schema")

    assert status == 0 and out == schema_text() and json.loads(out)["title"].startswith("railyard")


@pytest.mark.process
def test_the_installed_command_exits_with_the_verdict(tmp_path: Path) -> None:
    """`python -m app.cli validate` (the console script's entry) exits 1 for a broken file, 0 for SPEC's."""
    broken, good = tmp_path / "broken.yml", tmp_path / "good.yml"
    broken.write_text(BROKEN)
    good.write_text(SPEC_EXAMPLE)
    env = {"PATH": "/usr/bin:/bin", "PORT": "notaport", "DATABASE_URL": "notaurl"}
    runs = [
        subprocess.run(
            [sys.executable, "-m", "app.cli", "validate", str(p)], capture_output=True, text=True, env=env
        )
        for p in (broken, good)
    ]

    assert [run.returncode for run in runs] == [1, 0]
    assert "unknown key: tickets.lable" in runs[0].stdout and runs[1].stderr == ""


def test_validate_refuses_a_silence_limit_that_would_overflow_a_date(tmp_path: Path) -> None:
    """`max_silence_minutes: 9000000000` (it once stopped every watchdog round) exits 1 with its line."""
    path = tmp_path / "railyard.yml"
    path.write_text("roles:\n  runner: [cody]\nclaims:\n  max_silence_minutes: 9000000000\n")

    status, out, _ = validate(str(path))

    assert status == 1
    assert f"{path}: line 4: claims.max_silence_minutes: must be at most 525600, got 9000000000" in out


def test_absurd_watchdog_limits_are_refused_with_their_lines_and_bounds(tmp_path: Path) -> None:
    """A silence limit, an attempt deadline or a review wait that would overflow a date is refused
    by `validate`, each with its line and its bound; `null` turns the two new clocks off."""
    path = tmp_path / "railyard.yml"
    path.write_text(
        "claims:\n  max_silence_minutes: 9000000000\n  max_attempt_hours: 1000000000\n"
        "reviews:\n  max_wait_hours: 0\n"
    )

    status, out, _ = validate(str(path))

    assert status == 1
    assert f"{path}: line 2: claims.max_silence_minutes: must be at most 525600, got 9000000000" in out
    assert f"{path}: line 3: claims.max_attempt_hours: must be at most 8760, got 1000000000" in out
    assert f"{path}: line 5: reviews.max_wait_hours: must be at least 1, got 0" in out
    path.write_text("claims:\n  max_attempt_hours: null\nreviews:\n  max_wait_hours: null\n")
    status, out, _ = validate(str(path))
    assert status == 0 and "attempt deadline none · review wait none" in out


ORG_FILE = "limits:\n  commands_per_hour: 3\n  attempts_per_ticket: 4\n"


def test_extends_is_judged_with_the_base_given_and_the_summary_is_the_merged_policy(tmp_path: Path) -> None:
    """`--extends BASE`: the file laid over BASE as the server lays it; the summary shows both."""
    (tmp_path / "org.yml").write_text(ORG_FILE)
    (tmp_path / "repo.yml").write_text("_extends: .github\nlimits:\n  commands_per_hour: 9\n")

    status, out, _ = validate(str(tmp_path / "repo.yml"), "--extends", str(tmp_path / "org.yml"))

    assert status == 0
    assert f"OK · extends .github, merged with {tmp_path / 'org.yml'} · " in out
    assert "9 commands/hour" in out


def test_a_broken_base_fails_naming_the_base_file(tmp_path: Path) -> None:
    """The base's problems are listed under the file judged, each naming the base."""
    base = tmp_path / "org.yml"
    base.write_text("tickets:\n  lable: x\n")
    (tmp_path / "repo.yml").write_text("_extends: .github\n")

    status, out, _ = validate(str(tmp_path / "repo.yml"), "--extends", str(base))

    assert status == 1
    assert out.splitlines()[1] == (
        f"{tmp_path / 'repo.yml'}: {base}: line 2: unknown key: tickets.lable (did you mean label?)"
    )


def test_extends_without_a_base_is_judged_on_its_own_and_says_so(tmp_path: Path) -> None:
    """Without `--extends` the file alone is judged (it cannot be merged offline), and the line says it."""
    (tmp_path / "repo.yml").write_text("_extends: .github\n")

    status, out, _ = validate(str(tmp_path / "repo.yml"))

    assert status == 0 and "OK · on its own (it extends .github: give that file with --extends" in out


def test_a_malformed_extends_is_a_problem_on_its_line(tmp_path: Path) -> None:
    """`_extends: [x]` names no repository: exit 1 with the line."""
    (tmp_path / "repo.yml").write_text("tickets:\n  label: x\n_extends: [x]\n")

    status, out, _ = validate(str(tmp_path / "repo.yml"))

    assert status == 1
    assert out.splitlines()[1].endswith(
        "line 3: _extends: expected the name of a repository of this owner, such as .github"
    )


def test_a_base_for_a_file_that_does_not_extend_is_a_usage_error(tmp_path: Path) -> None:
    """The server would never read BASE for this file: exit 2 saying so."""
    (tmp_path / "repo.yml").write_text(ORG_FILE)
    (tmp_path / "org.yml").write_text(ORG_FILE)

    status, _, err = validate(str(tmp_path / "repo.yml"), "--extends", str(tmp_path / "org.yml"))

    assert status == 2 and "does not say _extends" in err
