"""The failures handlers and their adapters agree on.

Adapters (`app/`) raise these; the worker treats `TransientError` as worth retrying later and
anything else as a failed delivery for an operator to see.
"""

from __future__ import annotations


class TransientError(Exception):
    """Worth retrying later: GitHub unreachable or rate-limited, the database busy.

    `retry_at` (epoch seconds), when known, is the earliest moment a retry can succeed.
    """

    def __init__(self, message: str, retry_at: float | None = None) -> None:
        super().__init__(message)
        self.retry_at = retry_at


class CannotVerify(TransientError):  # noqa: N818 - it names the situation users see
    """GitHub would not say whether the actor holds a role; the command waits and retries."""


class Missing(Exception):  # noqa: N818 - it names the answer, not a fault
    """GitHub says the thing asked for does not exist (404, or 422 for an unknown commit)."""

    def __init__(self, what: str, status: int = 404) -> None:
        super().__init__(what)
        self.status = status
