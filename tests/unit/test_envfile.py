"""Writing `.env`: values read back exactly, other lines kept, the file private."""

from __future__ import annotations

import stat
from pathlib import Path

from dotenv import dotenv_values

from app.envfile import merged_lines, update_env_file
from tests.fakes import private_key_pem


def test_values_read_back_exactly_as_written(tmp_path: Path) -> None:
    """A multi-line PEM, quotes, backslashes and `#` survive python-dotenv's parsing."""
    values = {"PRIVATE_KEY": private_key_pem(), "WEBHOOK_SECRET": 'a"b\\c #d', "APP_ID": "42"}
    path = tmp_path / ".env"
    update_env_file(path, values)
    assert dotenv_values(path) == values


def test_other_lines_are_kept_and_the_keys_replaced_once() -> None:
    """Comments and unrelated settings stay in place; a key assigned twice keeps one new line."""
    existing = ["# railyard", "PUBLIC_URL=https://x.example", "export APP_ID=", "APP_ID=7", "PORT=3000"]
    assert merged_lines(existing, {"APP_ID": "42", "WEBHOOK_SECRET": "s"}) == [
        "# railyard",
        "PUBLIC_URL=https://x.example",
        'APP_ID="42"',
        "PORT=3000",
        'WEBHOOK_SECRET="s"',
    ]


def test_the_file_ends_up_readable_only_by_its_owner(tmp_path: Path) -> None:
    """An existing world-readable `.env` becomes 0600 once it holds secrets."""
    path = tmp_path / ".env"
    path.write_text("PORT=3000\n")
    path.chmod(0o644)
    update_env_file(path, {"APP_ID": "42"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == 'PORT=3000\nAPP_ID="42"\n'
    assert [p.name for p in tmp_path.iterdir()] == [".env"]  # no temporary file left behind
