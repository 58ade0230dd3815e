"""The README and docs/ are a front door and its rooms: every relative link resolves inside the
repository, and the README stays short enough to read."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def relative_links(text: str) -> list[str]:
    """The link targets of a Markdown text that point at a file, not at the web or an anchor."""
    prose = _FENCE.sub("", text)
    return [
        target
        for target in _LINK.findall(prose)
        if not re.match(r"[a-z][a-z+.-]*:", target) and not target.startswith("#")
    ]


def unresolved(page: Path) -> list[str]:
    """The relative links of `page` that name no file or folder inside the repository."""
    broken = []
    for target in relative_links(page.read_text()):
        resolved = (page.parent / target.split("#", 1)[0]).resolve()
        if not resolved.is_relative_to(ROOT) or not resolved.exists():
            broken.append(target)
    return broken


def test_relative_links_finds_files_and_skips_the_web_and_anchors() -> None:
    """The link reader is real: it finds a file link and an image, not a URL, an anchor or code."""
    text = "[a](docs/x.md#y) ![b](docs/b.png) [c](https://x.test) [d](#here)\n```\n[e](f.md)\n```\n"
    assert relative_links(text) == ["docs/x.md#y", "docs/b.png"]


def test_a_link_out_of_the_repository_counts_as_broken(tmp_path: Path) -> None:
    """A page linking outside the repository (as `../shared/SPEC.md` from the README did) fails."""
    page = tmp_path / "page.md"
    page.write_text("[spec](../../shared/SPEC.md) [missing](nowhere.md)")
    assert unresolved(page) == ["../../shared/SPEC.md", "nowhere.md"]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_resolves_inside_the_repository(page: Path) -> None:
    """Each relative link in the README and docs/ names a file or folder of this repository."""
    assert unresolved(page) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_no_page_points_at_the_workspace_outside_the_repository(page: Path) -> None:
    """The spec and notes beside the checkout are not part of it: no page names `../shared`."""
    assert "../shared" not in page.read_text()


def test_the_readme_is_a_front_door() -> None:
    """The quick start is within the README's first 40 lines and the README stays under 200."""
    lines = (ROOT / "README.md").read_text().splitlines()
    assert "## Quick start" in lines[:40]
    assert len(lines) <= 200


def test_no_file_holds_a_merge_conflict_marker() -> None:
    """A merge left unresolved (`<<<<<<< HEAD` ... `>>>>>>> branch`) never lands in a page or module."""
    marker = re.compile(r"^(<{7} |>{7} |={7}$)", re.MULTILINE)
    folders = (
        "app",
        "handlers",
        "policies",
        "support",
        "github_standin",
        "tests",
        "docs",
        "scripts",
        "bench",
    )
    installed = {"node_modules", "__pycache__"}  # `make bench-probot` installs Probot in bench/probot
    files = [
        path
        for folder in folders
        for path in (ROOT / folder).rglob("*")
        if path.is_file() and not installed & set(path.relative_to(ROOT).parts)
    ]
    files += [path for path in ROOT.iterdir() if path.is_file()]
    kinds = {".py", ".md", ".yml", ".yaml", ".toml", ".json", ".txt"}
    found = [
        str(path.relative_to(ROOT))
        for path in files
        if path.suffix in kinds and marker.search(path.read_text(errors="replace"))
    ]
    assert found == []
