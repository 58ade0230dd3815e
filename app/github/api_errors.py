"""GitHub's answers as errors: what retrying will not fix (`GitHubError` and its kinds), and
GitHub's passing states (`GitHubUnavailable`, `RateLimited`), which are transient."""

from __future__ import annotations

from handlers.errors import TransientError


class GitHubError(Exception):
    """GitHub answered with an error that retrying will not fix."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"GitHub answered {status}: {message}")
        self.status = status
        self.message = message


class NotFound(GitHubError):  # noqa: N818 - it names GitHub's answer
    """404: the thing does not exist (or the app cannot see it)."""


class Moved(GitHubError):  # noqa: N818 - it names GitHub's answer
    """301 that railyard does not follow (a write, or an address off the API): a transferred
    issue, for one. `location` is where GitHub says the thing is now."""

    def __init__(self, message: str, location: str | None) -> None:
        where = location or "an address GitHub did not give"
        super().__init__(301, f"{message}: it moved to {where} (a transferred issue?); not repeated there")
        self.location = location


class PermissionDenied(GitHubError):  # noqa: N818 - it names GitHub's answer
    """403 that is not a rate limit: the app lacks a permission."""


class GitHubUnavailable(TransientError):  # noqa: N818 - it names GitHub's state
    """5xx, a timeout or a broken connection. `ambiguous`: GitHub may have acted anyway."""

    def __init__(self, message: str, *, ambiguous: bool) -> None:
        super().__init__(message)
        self.ambiguous = ambiguous


class RateLimited(TransientError):  # noqa: N818 - it names GitHub's state
    """GitHub said to wait until `retry_at` (epoch seconds), for the whole installation."""


class ConfigurationError(ValueError):
    """The app's settings cannot work; the message says which and how to fix it."""
