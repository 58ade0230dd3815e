"""What the command line says when a setting or the machine stops it: what is wrong, which
setting, what to do, in a line or two; the traceback only with `--debug` or `LOG_LEVEL=debug`.

Exit 2 for usage and configuration problems, 1 for everything else.
"""

from __future__ import annotations

import errno
from urllib.parse import urlsplit

from pydantic import ValidationError
from sqlalchemy.exc import ArgumentError, DBAPIError

from app.github.client import ConfigurationError
from app.web.manifest import ManifestError

USAGE = 2
FAILURE = 1
# Settings whose values may be secret (or hold one, as a database URL's password): never echoed.
_SECRET_SETTINGS = ("PRIVATE_KEY", "WEBHOOK_SECRET", "METRICS_TOKEN", "DATABASE_URL")


class Stop(Exception):  # noqa: N818 - it names what the command does
    """A problem already explained: `message` is what to print, `status` the exit status."""

    def __init__(self, message: str, status: int = FAILURE) -> None:
        super().__init__(message)
        self.status = status


def _settings(error: ValidationError) -> Stop:
    lines = []
    for problem in error.errors():
        name = ".".join(str(part) for part in problem["loc"])
        given = "" if name in _SECRET_SETTINGS else f" (got {problem.get('input')!r})"
        lines.append(f"{name}: {problem['msg'].removeprefix('Value error, ')}{given}")
    # Several bad settings are several lines; the advice is said once.
    return Stop("\n".join(lines[:3]) + "\nfix it in the environment or in .env (see .env.example)", USAGE)


def _where(url: str) -> str:
    """Where a database URL points, without its password: the SQLite file, or PostgreSQL's host and port."""
    if url.startswith("sqlite"):
        return f"the SQLite file {url.partition(':///')[2] or ':memory:'}"
    parts = urlsplit(url)
    try:
        port = parts.port or 5432
    except ValueError:
        port = 5432
    return f"PostgreSQL at {parts.hostname or 'localhost'}:{port}"


def _database(error: DBAPIError, url: str | None) -> Stop:
    """Which database could not be used, and why."""
    where = _where(url) if url else "the database"
    if where.startswith("the SQLite file"):
        advice = "check that its directory exists and is writable, or set DATABASE_URL"
    else:
        advice = "check that it runs and accepts these credentials, or set DATABASE_URL"
    return Stop(f"cannot use {where} (DATABASE_URL): {_reason(error)}\n{advice}", FAILURE)


def _reason(error: DBAPIError) -> str:
    """The driver's own reason, without its preamble: "Connection refused", "password authentication..."."""
    lines = str(error.orig).strip().splitlines() if error.orig is not None else []
    if not lines:
        return type(error).__name__
    reason = lines[0].rpartition("failed: ")[2].removeprefix("FATAL:")
    return " ".join(reason.split())


def _os(error: OSError) -> Stop:
    what = f"{error.strerror or error}" + (f": {error.filename}" if error.filename else "")
    if error.errno in (errno.EACCES, errno.EPERM):
        return Stop(f"permission denied: {what}", FAILURE)
    return Stop(what, FAILURE)


def explain(error: BaseException, database_url: str | None = None) -> Stop:
    """The one-or-two-line answer for `error` (a Stop is returned as it is)."""
    if isinstance(error, Stop):
        return error
    if isinstance(error, ValidationError):
        return _settings(error)
    if isinstance(error, (ConfigurationError, ManifestError)):
        return Stop(str(error), USAGE)
    if isinstance(error, ArgumentError):
        return Stop("DATABASE_URL is not a database URL: expected sqlite:///PATH or postgresql://...", USAGE)
    if isinstance(error, DBAPIError):
        return _database(error, database_url)
    if isinstance(error, OSError):
        return _os(error)
    return Stop(f"unexpected {type(error).__name__}: {error}\nrun with --debug for the traceback", FAILURE)
