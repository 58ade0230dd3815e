"""The answer an API command got, kept so that the same request under the same key is answered
the same, byte for byte (re-exported by `handlers.ports`, where the store's reads name it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class KeptAnswer:
    """The answer an API command got, kept under the account's Idempotency-Key.

    `digest` names the request it answered (its route and body): the same key sent with
    another request is refused, never answered with this.
    """

    account_id: int
    key: str
    digest: str
    status: int
    body: Mapping[str, Any]
    at: datetime
