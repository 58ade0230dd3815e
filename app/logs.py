"""Every log line through structlog: JSON lines when stderr is not a terminal, readable lines on
one; secrets never reach them.

The standard library's root logger (aiohttp, httpx, alembic, sqlalchemy, githubkit) is rendered by
the same processors through structlog's `ProcessorFormatter`, so JSON and plain lines never mix.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog

_SECRET_WORDS = ("secret", "token", "private_key", "password", "authorization", "signature")
ACCESS_LOGGER = "aiohttp.access"
# Libraries that say too much at INFO: their warnings still show, their chatter only at debug.
# httpx's INFO line is each request's URL, and a manifest conversion's URL holds its one-time code.
_CHATTY = ("alembic", "httpx", "httpcore")


def redact(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Replace the value of any field whose name suggests a secret."""
    for key in list(event):
        if any(word in key.lower() for word in _SECRET_WORDS):
            event[key] = "[redacted]"
    return event


def _renderers(stream: TextIO) -> list[Any]:
    """JSON for machines (a pipe, a file, a container's log); aligned, coloured lines for a person."""
    if stream.isatty():
        return [structlog.dev.ConsoleRenderer(colors=True)]
    return [structlog.processors.format_exc_info, structlog.processors.JSONRenderer()]


def configure_logging(level: str = "info", stream: TextIO | None = None) -> None:
    """Route structlog and the stdlib root logger to one handler on `stream` (stderr) at `level`."""
    stream = stream or sys.stderr
    numeric = logging.getLevelName(level.upper())
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.ExtraAdder(),
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        redact,
    ]
    handler = logging.StreamHandler(stream)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                *_renderers(stream),
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
    for name in _CHATTY:
        logging.getLogger(name).setLevel(
            numeric if numeric <= logging.DEBUG else max(numeric, logging.WARNING)
        )
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=True,
    )
