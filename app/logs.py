"""Structured JSON logs; secrets never reach them."""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

_SECRET_WORDS = ("secret", "token", "private_key", "password", "authorization", "signature")


def redact(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Replace the value of any field whose name suggests a secret."""
    for key in list(event):
        if any(word in key.lower() for word in _SECRET_WORDS):
            event[key] = "[redacted]"
    return event


def configure_logging(level: str = "INFO") -> None:
    """JSON lines on stderr, with timestamps, levels and bound context (delivery id, event...)."""
    logging.basicConfig(format="%(message)s", stream=sys.stderr, level=level)
    logging.getLogger("alembic").setLevel(logging.WARNING)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            redact,
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level)),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )
