"""Writing settings into a `.env` file, the one `app.settings.Settings` reads at start."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path

_ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=")


def quote_value(value: str) -> str:
    """A double-quoted `.env` value that python-dotenv reads back as `value`, on one line."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'


def merged_lines(existing: list[str], values: Mapping[str, str]) -> list[str]:
    """`existing` lines with each assignment of a key in `values` replaced; new keys appended."""
    remaining = dict(values)
    lines: list[str] = []
    for line in existing:
        match = _ASSIGNMENT.match(line)
        if match is None or match.group(1) not in values:
            lines.append(line)
        elif match.group(1) in remaining:
            lines.append(f"{match.group(1)}={quote_value(remaining.pop(match.group(1)))}")
        # A second assignment of the same key is dropped: the new value must win.
    lines.extend(f"{key}={quote_value(value)}" for key, value in remaining.items())
    return lines


def update_env_file(path: Path, values: Mapping[str, str]) -> None:
    """Set `values` in the `.env` at `path`, keeping its other lines; the file ends up mode 0600.

    The new file is written beside the old one and renamed over it, so a crash leaves either
    the old file or the new one, and the secrets are never readable by others, not even briefly.
    """
    existing = path.read_text().splitlines() if path.exists() else []
    text = "\n".join(merged_lines(existing, values)) + "\n"
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".env.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w") as handle:  # mkstemp creates it with mode 0600
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    os.chmod(path, 0o600)
