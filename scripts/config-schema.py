#!/usr/bin/env python3
"""Write `railyard.schema.json` at the repository root from the configuration model
(`app/github/config.py`); `--check` only says whether the file is up to date (exit 1 if not)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.github.config_schema import SCHEMA_FILE, schema_text  # noqa: E402

if __name__ == "__main__":
    path, text = ROOT / SCHEMA_FILE, schema_text()
    if "--check" in sys.argv[1:]:
        fresh = path.exists() and path.read_text() == text
        print(f"{path} is {'up to date' if fresh else 'stale: run scripts/config-schema.py'}")
        sys.exit(0 if fresh else 1)
    path.write_text(text)
    print(f"wrote {path}")
