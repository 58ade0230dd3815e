#!/usr/bin/env python3
"""Rewrite the state diagram in docs/commands.md from the transition table (`policies/transitions.py`)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from policies.transitions import mermaid_diagram  # noqa: E402

START, END = "<!-- state-diagram:start -->", "<!-- state-diagram:end -->"


def render(readme: str) -> str:
    """The page's text with the block between the markers replaced by the current diagram."""
    before, _, rest = readme.partition(START)
    _, _, after = rest.partition(END)
    return f"{before}{START}\n```mermaid\n{mermaid_diagram()}```\n{END}{after}"


if __name__ == "__main__":
    path = ROOT / "docs" / "commands.md"
    path.write_text(render(path.read_text()))
    print(f"updated {path}")
