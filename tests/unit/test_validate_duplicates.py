"""A key given twice in one mapping of `.github/railyard.yml` is a problem with its line (YAML
requires keys unique; the loader would silently keep the last)."""

from __future__ import annotations

import io
from pathlib import Path

from app.cli import main


def test_a_duplicated_key_is_refused_with_its_line(tmp_path: Path) -> None:
    """YAML requires a mapping's keys to be unique (YAML 1.2, 3.2.1.1), so such a file "does not
    parse" (SPEC: reported, commands refused). railyard reads it last-wins, silently: here the
    first `roles:` block, the one a reviewer reads, is dropped and validate says OK (exit 0)."""
    path = tmp_path / "railyard.yml"
    path.write_text(
        'roles:\n  runner: ["@acme/agents"]\n  reviewer: ["@acme/reviewers"]\n'
        "limits:\n  commands_per_hour: 5\n"
        'roles:\n  runner: ["mallory"]\n'
    )
    out, err = io.StringIO(), io.StringIO()
    status = main(["validate", str(path)], None, out, err)
    assert status == 1, out.getvalue()
    assert "line 6" in out.getvalue()


def test_a_duplicated_key_is_named_on_one_line_whatever_it_spells() -> None:
    """A quoted key may hold a line break: the problem names it on its one line (as other problems
    show values), so a base file's problem can never pass for a line of this repository's own."""
    from app.github.config import parse_file

    parsed = parse_file('roles:\n  "a\\nacme/web: line 1: x": [a]\n  "a\\nacme/web: line 1: x": [b]\n')
    assert parsed.error is not None
    [problem] = parsed.error.problems
    assert "\n" not in problem and problem.startswith("line 3: ") and "given twice" in problem
