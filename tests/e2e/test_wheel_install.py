"""A plain, non-editable wheel install runs every command, away from the source tree.

The wheel is built once per session (`python -m build`: an sdist, then the wheel from the
unpacked sdist, so nothing outside what the package ships can leak in) and installed with
`--no-deps` into a fresh venv. Its dependencies are the ones this test run already has: a
`.pth` file puts the current interpreter's site-packages after the venv's own, so the venv's
`app` (the wheel's) wins and they need no registry (only the isolated build fetches its
setuptools, as any build does). Every command runs in a temporary folder, never the checkout.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
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

from support.ports import free_port

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

    def python(self, code: str) -> str:
        """Run Python `code` with the venv's interpreter in its working folder; return its output."""
        result = subprocess.run(
            [self.command("python"), "-c", code],
            cwd=self.workdir,
            env=self.env(),
            capture_output=True,
            text=True,
            check=True,
        )
        return result.stdout

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
    """railyard's wheel, built once for the run into a temporary folder. pytest-xdist's workers
    share it: one builds while the others wait on its lock (two builds of one source tree at
    once collide in its build/ folder)."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")  # the same in every worker of one run
    out = tmp_path_factory.getbasetemp().parent / f"wheel-{run}" if run else tmp_path_factory.mktemp("dist")
    out.mkdir(exist_ok=True)
    with (out / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not any(out.glob("railyard-*.whl")):
            build = [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)]
            built = subprocess.run(build, cwd=out, capture_output=True, text=True, timeout=600)
            assert built.returncode == 0, f"the build failed:\n{built.stdout[-3000:]}\n{built.stderr[-3000:]}"
    [wheel] = out.glob("railyard-*.whl")
    return wheel


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
    for path in installed.python(code).split():
        assert Path(path).is_relative_to(installed.venv), path
        assert not Path(path).is_relative_to(ROOT), path


def test_the_wheel_ships_the_manifest_the_repository_shows(installed: Installed) -> None:
    """The packaged app.yml, read through importlib.resources, is the repository root's app.yml."""
    code = "from app.web.manifest import load_manifest; import json; print(json.dumps(load_manifest()))"
    assert json.loads(installed.python(code)) == yaml.safe_load((ROOT / "app.yml").read_text())


# Every sub-command's --help in one process (a start that loads a database command is slow);
# serve's and worker's code is imported on use, so it is imported here.
SUB_HELPS = """
import contextlib, io, sys
import app.cli.processes
from app.cli import build_parser
for name in sys.argv[1:]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        build_parser().parse_args([name, "--help"])
    assert out.getvalue().startswith("usage: railyard " + name), (name, out.getvalue())
"""


def test_help_lists_every_command_and_each_command_has_its_help(installed: Installed) -> None:
    """`railyard --help` works, and so does `--help` of every sub-command (each module imports)."""
    result = installed.run("--help")
    assert result.returncode == 0, result.stderr
    listed = re.search(r"\{([a-z,-]+)\}", result.stdout)
    assert listed, result.stdout
    commands = listed.group(1).split(",")
    assert {"migrate", "serve", "worker"} <= set(commands)
    helps = subprocess.run(
        [installed.command("python"), "-c", SUB_HELPS, *commands],
        cwd=installed.workdir,
        env=installed.env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert helps.returncode == 0, helps.stderr


def test_migrate_creates_the_schema_and_the_read_commands_answer(
    installed: Installed, tmp_path: Path
) -> None:
    """`railyard migrate` creates a new SQLite file at the newest schema; `deliveries` and `check` read it."""
    database = tmp_path / "fresh.db"
    url = f"sqlite:///{database}"
    result = installed.run("migrate", DATABASE_URL=url)
    assert result.returncode == 0, result.stderr
    with sqlite3.connect(database) as connection:
        tables = {name for (name,) in connection.execute("select name from sqlite_master where type='table'")}
        [(version,)] = connection.execute("select version_num from alembic_version").fetchall()
    assert {"tickets", "alembic_version"} <= tables
    newest = sorted((ROOT / "app" / "store" / "migrations" / "versions").glob("[0-9]*.py"))[-1]
    assert f"revision = {version!r}" in newest.read_text().replace('"', "'")
    for command in (["deliveries", "--json"], ["check", "--json"]):
        answer = installed.run(*command, DATABASE_URL=url)
        assert answer.returncode == 0, (command, answer.stderr)
        json.loads(answer.stdout)


def get(url: str) -> tuple[int, str]:
    """The status and body of a GET, error statuses included."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 (a loopback http URL)
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@dataclass(frozen=True)
class Serving:
    """A running `railyard serve`: its base URL, its output file and its process."""

    base: str
    log: Path
    process: subprocess.Popen[bytes]

    def wait_for_health(self) -> tuple[int, str]:
        """`/healthz`'s first answer once the server listens; fails at once if the server exits."""
        deadline = time.monotonic() + 60  # start-up takes its time on a loaded machine
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                return get(f"{self.base}/healthz")
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"railyard serve never answered: {self.log.read_text()[-2000:]}")


@pytest.fixture
def serving(installed: Installed, tmp_path: Path) -> Iterator[Serving]:
    """`railyard serve` from the venv without credentials, on a free loopback port."""
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
        yield Serving(f"http://127.0.0.1:{port}", log, process)
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_serve_starts_in_setup_mode_and_serves_its_setup_page(serving: Serving) -> None:
    """Without credentials the installed server answers /healthz and shows the setup page at `/`."""
    status, body = serving.wait_for_health()
    assert status == 200 and json.loads(body)["mode"] == "setup", body
    found = TOKEN.search(serving.log.read_text())
    assert found, serving.log.read_text()
    status, page = get(f"{serving.base}/?token={found.group(1)}")
    assert status == 200 and "Register railyard on GitHub" in page, page
    assert "https://railyard.example.test/webhooks" in page and "<code>issue_comment</code>" in page


def test_the_demo_runs_from_the_wheel(installed: Installed, tmp_path: Path) -> None:
    """`railyard demo` from the installed wheel (its GitHub stand-in and issue pages inside the
    package) serves the board, signed in, with a ticket in every work state."""
    where = installed.python("import github_standin; print(github_standin.__file__)")
    assert where.startswith(str(installed.venv)), where
    log = tmp_path / "demo.log"
    with log.open("w") as errors:
        process = subprocess.Popen(
            [installed.command("railyard"), "demo", "--port", "0"],
            cwd=tmp_path,
            env=installed.env(TMPDIR=str(tmp_path)),
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
    try:
        printed = ""
        assert process.stdout is not None
        for line in process.stdout:  # the demo prints its board only once the story is played
            printed += line
            if "Ctrl-C stops the demo." in line:
                break
        board = re.search(r"Board:\s+(\S+)", printed)
        issues = re.search(r"Issues:\s+(\S+)", printed)
        assert board and issues, printed + log.read_text()
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        with browser.open(board[1], timeout=30) as response:  # through the stand-in's OAuth pages
            page = response.read().decode()
        counts = dict(re.findall(r'<h2 id="col-(\w+)">\w+ <span class="muted">\((\d+)\)</span>', page))
        assert sorted(counts) == sorted(["draft", "open", "claimed", "delivered", "accepted"]), page
        assert all(int(count) >= 1 for count in counts.values()), counts
        status, issue = get(f"{issues[1]}/6")
        assert status == 200 and "<strong>Work: accepted" in issue
    finally:
        process.terminate()
        process.wait(timeout=30)
