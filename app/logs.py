"""Every log line through structlog: JSON lines when stderr is not a terminal, readable lines on
one; secrets never reach them.

The standard library's root logger (aiohttp, httpx, alembic, sqlalchemy, githubkit) is rendered by
the same processors through structlog's `ProcessorFormatter`, so JSON and plain lines never mix.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, MutableMapping
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


class UnreadableRequests(logging.Filter):
    """aiohttp's line for each request it cannot parse as HTTP (a control character in a header, a
    chunk size that is not hex), at error with a traceback: anyone can send those, so each `every`
    seconds one warning without the traceback, counting those it stands for since the last one
    (`suppressed_since_last`). aiohttp answers them 400 itself; its other lines pass unchanged."""

    def __init__(self, every: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._every, self._clock = every, clock
        self._last: float | None = None
        self._suppressed = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.exc_info:
            return True
        # Imported here: only a server logs through aiohttp, and a command line must not load it.
        from aiohttp.http_exceptions import HttpProcessingError

        if not isinstance(record.exc_info[1], HttpProcessingError):
            return True
        now = self._clock()
        if self._last is not None and now - self._last < self._every:
            self._suppressed += 1
            return False
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.msg, record.args = "a request that is not readable HTTP was answered 400", ()
        record.exc_info, record.exc_text = None, None
        record.suppressed_since_last = self._suppressed
        self._last, self._suppressed = now, 0
        return True


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
    server = logging.getLogger("aiohttp.server")
    server.filters[:] = [f for f in server.filters if not isinstance(f, UnreadableRequests)]
    server.addFilter(UnreadableRequests())
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
