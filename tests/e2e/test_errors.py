"""Bad settings and startup problems, as a user meets them: the installed `railyard` in a clean
environment answers in at most four lines, names the setting, no traceback; exit 2 for usage and
configuration, 1 otherwise; `--debug` or `LOG_LEVEL=debug` adds the traceback."""

from __future__ import annotations

import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from support.ports import free_port

RAILYARD = str(Path(sys.executable).parent / "railyard")
UNREACHABLE_POSTGRES = "postgresql://railyard:hunter2@127.0.0.1:1/railyard"


def railyard(tmp_path: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run the installed entry point in tmp_path (no .env there) with only `env` and PATH (and a
    port of its own: a `serve` that gets past its settings must not meet whatever holds 3000)."""
    clean = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "DATABASE_URL": f"sqlite:///{tmp_path}/r.db",
        "PORT": str(free_port()),
        **env,
    }
    return subprocess.run(
        [RAILYARD, *argv], env=clean, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
    )


def assert_explained(result: subprocess.CompletedProcess[str], setting: str, status: int) -> None:
    """At most four lines, no traceback, the setting named, the expected exit status."""
    output = result.stderr + result.stdout
    assert result.returncode == status, output
    assert len(output.splitlines()) <= 4, output
    assert "Traceback" not in output
    assert setting in result.stderr


CONFIGURED = {"APP_ID": "1", "WEBHOOK_SECRET": "s"}
CASES = [
    pytest.param(["status", "acme/web#1"], {"DATABASE_URL": "notaurl"}, "DATABASE_URL", 2, id="database-url"),
    pytest.param(["status", "acme/web#1"], {"PORT": "notaport"}, "PORT", 2, id="port"),
    pytest.param(["serve"], {"PORT": "99999"}, "PORT", 2, id="port-range"),
    pytest.param(["serve"], {"HOST": "nohost.invalid"}, "HOST", 2, id="host"),
    pytest.param(["serve"], {"LOG_LEVEL": "loud"}, "LOG_LEVEL", 2, id="log-level"),
    pytest.param(["serve"], {**CONFIGURED, "PRIVATE_KEY": "not-a-key"}, "PRIVATE_KEY", 2, id="private-key"),
    pytest.param(
        ["serve"],
        {**CONFIGURED, "PRIVATE_KEY_PATH": "/nonexistent/app.pem"},
        "PRIVATE_KEY_PATH",
        2,
        id="key-path",
    ),
    pytest.param(["serve"], {"DATABASE_URL": UNREACHABLE_POSTGRES}, "DATABASE_URL", 1, id="postgres-serve"),
    pytest.param(
        ["status", "a/b#1"], {"DATABASE_URL": UNREACHABLE_POSTGRES}, "DATABASE_URL", 1, id="postgres-cli"
    ),
    pytest.param(
        ["migrate"], {"DATABASE_URL": "sqlite:////nonexistent/dir/r.db"}, "DATABASE_URL", 1, id="sqlite"
    ),
]


@pytest.mark.parametrize(("argv", "env", "setting", "status"), CASES)
def test_a_bad_setting_is_explained_in_a_few_lines(
    tmp_path: Path, argv: list[str], env: dict[str, str], setting: str, status: int
) -> None:
    """Each bad setting gets what is wrong and which setting, without a traceback."""
    assert_explained(railyard(tmp_path, *argv, **env), setting, status)


def test_an_unreachable_database_says_where_but_never_the_password(tmp_path: Path) -> None:
    """The host and port are named; the password in DATABASE_URL is not."""
    result = railyard(tmp_path, "serve", DATABASE_URL=UNREACHABLE_POSTGRES)
    assert "127.0.0.1:1" in result.stderr and "hunter2" not in result.stderr + result.stdout


def test_a_port_in_use_is_said_before_the_server_starts(tmp_path: Path) -> None:
    """`serve` on a taken port names PORT and exits 1 without having logged "railyard started"."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        result = railyard(tmp_path, "serve", HOST="127.0.0.1", PORT=port)
    assert_explained(result, "PORT", 1)
    assert "already in use" in result.stderr and "railyard started" not in result.stderr


@pytest.mark.parametrize(
    ("argv", "env"),
    [
        pytest.param(["--debug", "status", "a/b#1"], {"DATABASE_URL": "notaurl"}, id="--debug"),
        pytest.param(["status", "a/b#1"], {"DATABASE_URL": "notaurl", "LOG_LEVEL": "debug"}, id="LOG_LEVEL"),
    ],
)
def test_debug_adds_the_traceback(tmp_path: Path, argv: list[str], env: dict[str, str]) -> None:
    """With `--debug` or `LOG_LEVEL=debug` the same problem comes with its traceback."""
    result = railyard(tmp_path, *argv, **env)
    assert result.returncode == 2
    assert "Traceback" in result.stderr and "DATABASE_URL" in result.stderr


def test_version_prints_the_package_version(tmp_path: Path) -> None:
    """`railyard --version` prints the installed version and exits 0."""
    result = railyard(tmp_path, "--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"railyard {metadata.version('railyard')}"


def test_an_unknown_command_is_a_usage_error(tmp_path: Path) -> None:
    """A command that does not exist exits 2 with argparse's usage line."""
    result = railyard(tmp_path, "serv")
    assert result.returncode == 2 and "usage: railyard" in result.stderr
