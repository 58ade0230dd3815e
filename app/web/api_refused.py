"""The API's answer given before the one door: a status, a stable code and a sentence."""

from __future__ import annotations

from collections.abc import Mapping


class Refused(Exception):  # noqa: N818 - it is the answer, not a failure
    """An answer given before the one door: a status, a stable code and a sentence."""

    def __init__(
        self, status: int, code: str, message: str, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers = dict(headers or {})
