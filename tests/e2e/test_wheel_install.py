"""A plain, non-editable wheel install runs every command, away from the source tree.

The wheel is built once per session (`python -m build`: an sdist, then the wheel from the
unpacked sdist, so nothing outside what the package ships can leak in) and installed with
`--no-deps` into a fresh venv. Its dependencies are the ones this test run already has: a
`.pth` file puts the current interpreter's site-packages after the venv's own, so the venv's
`app` (the wheel's) wins and no registry is needed. Every command runs with its working
directory in a temporary folder, never the checkout.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import sysconfig
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
TOKEN = re.compile(r"\?token=([A-Za-z0-9_-]+)")
CREDENTIALS = ("APP_ID", "PRIVATE_KEY", "PRIVATE_KEY_PATH", "WEBHOOK_SECRET")


@dataclass(frozen=True)
class Installed:
    """A venv holding the wheel, and the folder its commands run in."""

    venv: Path
    workdir: Path

    def command(self, name: str) -> str:
        """The path of one of the venv's executables."""
        return str(self.venv / "bin" / name)

    def env(self, **extra: str) -> dict[str, str]:
        """This environment without anything that could point back at the checkout or at an app."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", *CREDENTIALS)}
        env.update({"DATABASE_URL": f"sqlite:///{self.workdir}/railyard.db", "PATH": self.command("")})
        env["PATH"] += os.pathsep + os.environ.get("PATH", "")
        return {**env, **extra}

    def run(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        """Run `railyard ARGS` from the venv in its working folder."""
        return subprocess.run(
            [self.command("railyard"), *args],
            cwd=self.workdir,
            env=self.env(**extra),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """railyard's wheel, built once for the session into a temporary folder."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        cwd=out,
        capture_output=True,
        check=True,
        timeout=600,
    )
    [built] = out.glob("railyard-*.whl")
    return built


@pytest.fixture(scope="session")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """A fresh venv (outside the checkout) with the wheel installed, not editable, without deps."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # Plain paths in a .pth are appended to sys.path; .pth files inside them (such as the
    # checkout's editable-install hook) are not run, so they cannot bring the source tree back.
    ours = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (Path(site) / "railyard-test-dependencies.pth").write_text("\n".join(ours) + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", str(wheel)],
        cwd=venv,
        check=True,
        timeout=300,
    )
    return Installed(venv=venv, workdir=tmp_path_factory.mktemp("work"))


def test_the_package_is_imported_from_the_venv_not_the_checkout(installed: Installed) -> None:
    """`app`, `handlers` and `policies` load from the venv's site-packages, and not as an editable install."""
    code = "import app, handlers, policies; print(app.__file__, handlers.__file__, policies.__file__)"
    result = subprocess.run(
        [installed.command("python"), "-c", code],
        cwd=installed.workdir,
        env=installed.env(),
        capture_output=True,
        text=True,
        check=True,
    )
    for path in result.stdout.split():
        assert Path(path).is_relative_to(installed.venv), path
        assert not Path(path).is_relative_to(ROOT), path


def test_the_wheel_ships_the_manifest_the_repository_shows(installed: Installed) -> None:
    """The packaged app.yml, read through importlib.resources, is the repository root's app.yml."""
    code = "from app.web.manifest import load_manifest; import json; print(json.dumps(load_manifest()))"
    result = subprocess.run(
        [installed.command("python"), "-c", code],
        cwd=installed.workdir,
        env=installed.env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(result.stdout) == yaml.safe_load((ROOT / "app.yml").read_text())


def test_help_lists_every_command_and_each_command_has_its_help(installed: Installed) -> None:
    """`railyard --help` works, and so does `--help` of every sub-command (each module imports)."""
    result = installed.run("--help")
    assert result.returncode == 0, result.stderr
    listed = re.search(r"\{([a-z,-]+)\}", result.stdout)
    assert listed, result.stdout
    commands = listed.group(1).split(",")
    assert {"migrate", "serve", "worker"} <= set(commands)
    for command in commands:
        sub = installed.run(command, "--help")
        assert sub.returncode == 0 and "usage: railyard" in sub.stdout, (command, sub.stderr)


def test_migrate_creates_the_schema_in_a_new_sqlite_file(installed: Installed, tmp_path: Path) -> None:
    """`railyard migrate` on a file that does not exist yet creates it with the newest schema."""
    database = tmp_path / "fresh.db"
    result = installed.run("migrate", DATABASE_URL=f"sqlite:///{database}")
    assert result.returncode == 0, result.stderr
    with sqlite3.connect(database) as connection:
        tables = {name for (name,) in connection.execute("select name from sqlite_master where type='table'")}
        [(version,)] = connection.execute("select version_num from alembic_version").fetchall()
    assert {"tickets", "alembic_version"} <= tables
    newest = sorted((ROOT / "app" / "store" / "migrations" / "versions").glob("[0-9]*.py"))[-1]
    assert newest.name.startswith(version[:4]) or version in newest.read_text()


def test_the_read_commands_answer_on_a_migrated_database(installed: Installed, tmp_path: Path) -> None:
    """`deliveries --json` and `check --json` run against a migrated file and print JSON."""
    url = f"sqlite:///{tmp_path}/read.db"
    assert installed.run("migrate", DATABASE_URL=url).returncode == 0
    for command in (["deliveries", "--json"], ["check", "--json"]):
        result = installed.run(*command, DATABASE_URL=url)
        assert result.returncode == 0, (command, result.stderr)
        json.loads(result.stdout)


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def get(url: str) -> tuple[int, str]:
    """The status and body of a GET, error statuses included."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 (a loopback http URL)
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.fixture
def serving(installed: Installed, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`railyard serve` from the venv without credentials, its base URL and its output file."""
    port, log = free_port(), tmp_path / "serve.log"
    env = installed.env(
        DATABASE_URL=f"sqlite:///{tmp_path}/serve.db",
        HOST="127.0.0.1",
        PORT=str(port),
        PUBLIC_URL="https://railyard.example.test",
    )
    with log.open("w") as output:
        process = subprocess.Popen(
            [installed.command("railyard"), "serve"], cwd=tmp_path, env=env, stdout=output, stderr=output
        )
    try:
        yield f"http://127.0.0.1:{port}", log
    finally:
        process.terminate()
        process.wait(timeout=30)


def wait_for_health(base: str, log: Path) -> tuple[int, str]:
    """`/healthz`'s first answer once the server listens (start-up takes its time, so wait)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            return get(f"{base}/healthz")
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"railyard serve never answered: {log.read_text()[-2000:]}")


def test_serve_starts_in_setup_mode_and_serves_its_setup_page(serving: tuple[str, Path]) -> None:
    """Without credentials the installed server answers /healthz and shows the setup page at `/`."""
    base, log = serving
    status, body = wait_for_health(base, log)
    assert status == 200 and json.loads(body)["mode"] == "setup", body
    found = TOKEN.search(log.read_text())
    assert found, log.read_text()
    status, page = get(f"{base}/?token={found.group(1)}")
    assert status == 200 and "Register railyard on GitHub" in page, page
    assert "https://railyard.example.test/webhooks" in page and "<code>issue_comment</code>" in page
