"""Packaging that cannot drift: one app manifest, bounded dependencies, lock files that hold
every dependency at a version pyproject.toml allows, and the licence pyproject.toml names."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
RUNTIME = [Requirement(text) for text in PROJECT["dependencies"]]
DEV = [Requirement(text) for text in PROJECT["optional-dependencies"]["dev"]]


def locked(name: str) -> dict[str, Requirement]:
    """The pins of a lock file (`name==version ; marker \\` lines), by canonical name."""
    pins = {}
    for line in (ROOT / name).read_text().splitlines():
        if line and not line[0].isspace() and not line.startswith("#"):
            requirement = Requirement(line.removesuffix("\\").strip())
            pins[canonicalize_name(requirement.name)] = requirement
    return pins


def test_the_root_manifest_and_the_packaged_one_are_the_same_file() -> None:
    """app.yml at the root (what GitHub and the README show) is byte for byte the packaged one."""
    packaged = (ROOT / "app" / "web" / "app.yml").read_bytes()
    assert (ROOT / "app.yml").read_bytes() == packaged, (
        "app.yml and app/web/app.yml differ: edit one, then copy it over the other"
    )


def test_the_packaged_manifest_is_declared_as_package_data() -> None:
    """The wheel carries app/web/app.yml because pyproject.toml declares it for app.web."""
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "app.yml" in package_data["app.web"]


@pytest.mark.parametrize("requirement", RUNTIME + DEV, ids=str)
def test_every_dependency_has_a_floor_and_a_ceiling(requirement: Requirement) -> None:
    """An exact pin, or both a lower (`>=`) and an upper (`<`) bound."""
    operators = {spec.operator for spec in requirement.specifier}
    assert operators == {"=="} or {">=", "<"} <= operators, f"{requirement} needs >= and <"


def test_githubkit_stays_pinned_with_a_hishel_it_works_with() -> None:
    """githubkit 0.16.1 breaks with hishel 2.0.0: both stay pinned, and so locked."""
    pins = {canonicalize_name(r.name): str(r.specifier) for r in RUNTIME}
    assert pins["githubkit"] == "==0.16.1"
    assert "2.0.0" not in Requirement(f"hishel{pins['hishel']}").specifier
    assert str(locked("requirements.lock")["hishel"].specifier) == pins["hishel"]


@pytest.mark.parametrize(
    ("lock", "declared"), [("requirements.lock", RUNTIME), ("requirements-dev.lock", RUNTIME + DEV)]
)
def test_the_lock_files_hold_every_dependency_at_an_allowed_version(
    lock: str, declared: list[Requirement]
) -> None:
    """Each declared dependency is locked `==` at a version its specifier admits (else `make lock`)."""
    pins = locked(lock)
    for requirement in declared:
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement.name} is not in {lock}: run `make lock`"
        [pin] = pins[name].specifier
        assert pin.operator == "==" and pin.version in requirement.specifier, f"{lock}: {pins[name]}"


def test_every_locked_version_carries_a_hash() -> None:
    """Hash-checked installs (`pip install --require-hashes`) need a hash under every pin."""
    for lock in ("requirements.lock", "requirements-dev.lock"):
        text = (ROOT / lock).read_text()
        assert text.count("==") <= text.count("--hash=sha256:"), lock


def test_the_licence_is_the_mit_licence_pyproject_names() -> None:
    """LICENSE is MIT's text for railyard's contributors, and the wheel ships it."""
    assert PROJECT["license"] == "MIT" and PROJECT["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n\nCopyright (c) 2026 railyard contributors\n")
    assert 'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND' in text
