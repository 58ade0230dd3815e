"""Settings: one typed object, read from the environment or a `.env` file, loaded once.

Names follow Probot's where they exist. Secrets are `SecretStr`, so they never print.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.contracts.database_url import normalize_database_url

DEFAULT_DATABASE_URL = "sqlite:///railyard.db"
LogLevel = Literal["debug", "info", "warning", "error"]


class Settings(BaseSettings):
    """Everything railyard reads from its environment."""

    # Empty values count as unset, so a copy of .env.example (every name, most blank) loads.
    model_config = SettingsConfigDict(
        env_file=".env", extra="ignore", populate_by_name=True, env_ignore_empty=True
    )

    app_id: int | None = Field(default=None, alias="APP_ID")
    private_key: SecretStr | None = Field(default=None, alias="PRIVATE_KEY")
    private_key_path: Path | None = Field(default=None, alias="PRIVATE_KEY_PATH")
    webhook_secret: SecretStr | None = Field(default=None, alias="WEBHOOK_SECRET")
    github_api_url: str = Field(default="https://api.github.com", alias="GITHUB_API_URL")
    public_url: str | None = Field(default=None, alias="PUBLIC_URL")
    database_url: str = Field(default=DEFAULT_DATABASE_URL, alias="DATABASE_URL")
    host: str = Field(default="127.0.0.1", alias="HOST")
    port: int = Field(default=3000, alias="PORT", ge=0, le=65535)
    metrics_token: SecretStr | None = Field(default=None, alias="METRICS_TOKEN")
    payload_retention_days: float = Field(default=7.0, alias="PAYLOAD_RETENTION_DAYS", gt=0)
    delivery_retention_days: float = Field(default=30.0, alias="DELIVERY_RETENTION_DAYS", gt=0)
    held_retention_days: float = Field(default=14.0, alias="HELD_RETENTION_DAYS", gt=0)
    recovery_interval_seconds: float = Field(default=600.0, alias="RECOVERY_INTERVAL_SECONDS", gt=0)
    watchdog_interval_seconds: float = Field(default=60.0, alias="WATCHDOG_INTERVAL_SECONDS", gt=0)
    # How often accepted tickets with open PRs are judged again (SPEC: at least hourly).
    acceptance_recheck_seconds: float = Field(
        default=3600.0, alias="ACCEPTANCE_RECHECK_SECONDS", gt=0, le=3600
    )
    github_web_url: str = Field(default="https://github.com", alias="GITHUB_WEB_URL")
    github_client_id: str | None = Field(default=None, alias="GITHUB_CLIENT_ID")
    github_client_secret: SecretStr | None = Field(default=None, alias="GITHUB_CLIENT_SECRET")
    session_secret: SecretStr | None = Field(default=None, alias="SESSION_SECRET")
    # Conditional requests: how many GET answers (and megabytes) are kept; 0 rows sends none.
    http_cache_max_rows: int = Field(default=20_000, alias="HTTP_CACHE_MAX_ROWS", ge=0)
    http_cache_max_mb: float = Field(default=64.0, alias="HTTP_CACHE_MAX_MB", gt=0)
    # The API's reads per account and minute (per process); past it: 429 with Retry-After.
    api_reads_per_minute: int = Field(default=600, alias="API_READS_PER_MINUTE", gt=0)
    # SQLite: where the intake commits, a process of its own (the default) or a server thread.
    intake_writer: Literal["process", "thread"] = Field(default="process", alias="INTAKE_WRITER")
    log_level: LogLevel = Field(default="info", alias="LOG_LEVEL")
    access_log: bool = Field(default=False, alias="ACCESS_LOG")

    @field_validator("database_url")
    @classmethod
    def _driver(cls, url: str) -> str:
        url = normalize_database_url(url)
        scheme, separator, _ = url.partition("://")
        if not separator or scheme.split("+")[0] not in ("sqlite", "postgresql"):
            # Never echo the URL: it may hold a password.
            raise ValueError("expected sqlite:///PATH or postgresql://USER:PASSWORD@HOST:PORT/DATABASE")
        return url

    @field_validator("log_level", mode="before")
    @classmethod
    def _lowercase(cls, level: object) -> object:
        return level.strip().lower() if isinstance(level, str) else level

    @property
    def configured(self) -> bool:
        """Whether the app's credentials are present; without them `serve` runs in setup mode."""
        has_key = self.private_key is not None or self.private_key_path is not None
        return self.app_id is not None and has_key and bool(self.webhook_secrets)

    @property
    def sign_in(self) -> bool:
        """Whether sign-in with GitHub is possible: the app's OAuth client id and secret are set."""
        return bool(self.github_client_id) and self.github_client_secret is not None

    @property
    def webhook_secrets(self) -> list[SecretStr]:
        """Every accepted webhook secret (comma-separated in WEBHOOK_SECRET, for rotation)."""
        if self.webhook_secret is None:
            return []
        parts = self.webhook_secret.get_secret_value().split(",")
        return [SecretStr(part.strip()) for part in parts if part.strip()]
