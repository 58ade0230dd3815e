"""The state diagram in docs/commands.md is generated from the transition table and kept in step."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _renderer() -> object:
    spec = importlib.util.spec_from_file_location("render_diagram", ROOT / "scripts" / "render-diagram.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_state_diagram_matches_the_transition_table() -> None:
    """A change to the table without `make diagram` fails here."""
    readme = (ROOT / "docs" / "commands.md").read_text()
    assert _renderer().render(readme) == readme, "docs/commands.md diagram is stale: run `make diagram`"  # type: ignore[attr-defined]


def test_the_diagram_has_one_arrow_per_source_of_every_row() -> None:
    """Every command row of SPEC appears in the picture, including the moves out of accepted."""
    readme = (ROOT / "docs" / "commands.md").read_text()
    for arrow in (
        "accepted --> delivered: /deliver (claimant holding runner)",
        "accepted --> open: /reopen (owner, repository_maintainer)",
        "delivered --> accepted: /accept --override (repository_maintainer, release_owner)",
        "[*] --> open: /publish (requester, task_owner)",
    ):
        assert arrow in readme
