"""The database URL as railyard uses it, from the forms people paste: shared by the settings
and the database (and the intake's writer process, which loads no settings)."""

from __future__ import annotations


def normalize_database_url(url: str) -> str:
    """Accept the URLs people paste (`postgres://`, `postgresql://`) and pick the psycopg driver."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url
