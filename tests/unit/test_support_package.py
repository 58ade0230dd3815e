"""`bench/` and `scripts/` share with the tests only the top-level `support` package (and the
`github_standin` package), never a test folder; `support` itself imports nothing from `tests`."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tests.unit.test_layers import ROOT, imports_of, source_files


def python_scripts() -> list[Path]:
    """The Python programs under scripts/: `*.py` files and extensionless files with a python shebang."""
    found = []
    for path in sorted((ROOT / "scripts").iterdir()):
        if path.suffix == ".py" or (
            path.is_file() and not path.suffix and path.read_text().startswith("#!/usr/bin/env python")
        ):
            found.append(path)
    return found


def imports_from_tests(path: Path) -> list[str]:
    """The modules of the `tests` package that `path` imports, anywhere in the file."""
    return sorted({i.module for i in imports_of(path) if i.module.split(".")[0] == "tests"})


SHARERS = [*source_files("bench", "support"), *python_scripts()]


@pytest.mark.parametrize("path", SHARERS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_bench_scripts_and_support_import_nothing_from_tests(path: Path) -> None:
    """A benchmark, a script or the support package never reaches into a test folder."""
    assert imports_from_tests(path) == []


def test_the_scripts_finder_sees_the_extensionless_python_script() -> None:
    """scripts/screenshots (a python program without `.py`) is among the files checked."""
    assert ROOT / "scripts" / "screenshots" in SHARERS
    assert ROOT / "scripts" / "postgres-for-tests" not in SHARERS


def test_the_finder_sees_a_test_import_in_a_function(tmp_path: Path) -> None:
    """An import of `tests.fakes` inside a function counts; `testsuite` is another package."""
    probe = tmp_path / "probe.py"
    probe.write_text("import testsuite\ndef f() -> None:\n    from tests.fakes import example\n")
    assert imports_from_tests(probe) == ["tests.fakes", "tests.fakes.example"]


def test_the_support_package_is_not_shipped_in_the_wheel() -> None:
    """The wheel's packages are railyard's own; the support package stays in the repository."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    included = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    assert not [pattern for pattern in included if pattern.startswith(("support", "tests", "bench"))]
