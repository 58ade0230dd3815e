"""Failures the worker and the outbox know how to treat."""

from __future__ import annotations


class TransientError(Exception):
    """Worth retrying later: GitHub unreachable or rate-limited, the database busy.

    `retry_at` (epoch seconds), when known, is the earliest moment a retry can succeed.
    """

    def __init__(self, message: str, retry_at: float | None = None) -> None:
        super().__init__(message)
        self.retry_at = retry_at
