"""railyard's version, as its installed package says (no settings, nothing else imported)."""

from __future__ import annotations

from importlib import metadata

# What a source checkout that was never installed calls itself (PEP 440's local-version form).
UNKNOWN_VERSION = "0+unknown"


def railyard_version() -> str:
    """The installed package's version (from its metadata), or `0+unknown` when not installed."""
    try:
        return metadata.version("railyard")
    except metadata.PackageNotFoundError:
        return UNKNOWN_VERSION
