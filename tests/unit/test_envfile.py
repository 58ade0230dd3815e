"""Writing `.env`: values read back exactly, other lines kept, the file private."""

from __future__ import annotations

import stat
from pathlib import Path

from dotenv import dotenv_values

from app.github.client import read_private_key
from app.settings import Settings
from app.web.envfile import merged_lines, update_env_file
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


def test_a_copy_of_env_example_loads_in_setup_mode(tmp_path: Path) -> None:
    """Blank names in `.env` count as unset: no crash on `APP_ID=`, no empty metrics token."""
    env = tmp_path / ".env"
    env.write_text((Path(__file__).resolve().parents[2] / ".env.example").read_text())
    settings = Settings(_env_file=env)  # type: ignore[call-arg]
    assert settings.app_id is None and not settings.configured
    assert settings.metrics_token is None and settings.private_key_path is None


def test_the_setup_page_values_turn_a_copy_of_env_example_into_a_configured_app(tmp_path: Path) -> None:
    """What the setup page writes into a `.env` copied from `.env.example` is enough to leave setup mode."""
    env = tmp_path / ".env"
    env.write_text((Path(__file__).resolve().parents[2] / ".env.example").read_text())
    update_env_file(env, {"APP_ID": "42", "PRIVATE_KEY": private_key_pem(), "WEBHOOK_SECRET": "s3cret"})
    settings = Settings(_env_file=env)  # type: ignore[call-arg]
    assert settings.configured and settings.app_id == 42
    assert read_private_key(settings) == private_key_pem()
