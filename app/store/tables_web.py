"""The tables of the web side: API answers and budgets, the shared HTTP cache, browser sessions.

None of them is part of the record: each is pruned or evicted (`app.store.retention`,
`app.store.budgets`, `app.store.http_cache`, `app.store.web_sessions`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Column, Index, LargeBinary, Text
from sqlmodel import Field, SQLModel

from app.store.columns import UTCDateTime, json_field


class ApiAnswerRow(SQLModel, table=True):
    """The answer an API command got, kept under the account and its `Idempotency-Key`.

    Written in the same transaction as the change, so a request replayed with the same key
    gets exactly this answer (`digest` is the request it answered: the same key with another
    request is refused), and no change can exist without its answer.
    """

    __tablename__ = "api_answers"

    account_id: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    idempotency_key: str = Field(primary_key=True)
    digest: str  # sha256 of the route and the request body it answered
    status: int
    body: dict[str, Any] = json_field()
    at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False, index=True))


class ApiBudgetRow(SQLModel, table=True):
    """What one account has spent of one API budget in one fixed window (`app.store.budgets`).

    `scope` names the budget ("commands:<repository id>", "outsider:<repository id>", "reads");
    `window_start` is the window's first second (epoch). One row per account, scope and window,
    pruned once the window is over: an account can only add to its own rows.
    """

    __tablename__ = "api_budgets"

    account_id: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    scope: str = Field(primary_key=True)
    window_start: float = Field(primary_key=True, index=True)
    spent: int


class HttpCacheRow(SQLModel, table=True):
    """A GET's answer kept for conditional requests, shared by every process on the database.

    `key` is a sha256 of method, URL and the credential's scope (an installation, or a
    sha256 of a user token: never the token). `stored_at` orders eviction, oldest first.
    """

    __tablename__ = "http_cache"

    key: str = Field(primary_key=True)
    scope: str
    url: str = Field(sa_column=Column(Text, nullable=False))
    etag: str
    body: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    size: int
    stored_at: float = Field(index=True)


class InstallationTokenRow(SQLModel, table=True):
    """An installation token GitHub issued, sealed, shared by every process on the database
    (`app.store.token_cache`).

    `key` is a sha256 of githubkit's cache key (the app, the installation and the token's
    scope); `sealed` is the token encrypted and authenticated (AES-GCM) under a key derived
    from the app's private key, which the database never holds; `expires_at` is when railyard
    stops using it (a minute before GitHub's expiry).
    """

    __tablename__ = "installation_tokens"

    key: str = Field(primary_key=True)
    sealed: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    expires_at: float = Field(index=True)


class WebSessionRow(SQLModel, table=True):
    """A signed-in browser session, shared by every server process on the database.

    The cookie carries a random session id; only its sha256 is kept here (`key`), so this
    table holds no secret. Signing out sets `ended_at`: every process refuses the cookie at its
    next page request. Rows past `expires_at` are deleted by housekeeping, and an account's
    rows but its newest live ones whenever it starts another (`app.store.web_sessions`).
    """

    __tablename__ = "web_sessions"
    __table_args__ = (Index("ix_web_sessions_account_created", "account_id", "created_at"),)

    key: str = Field(primary_key=True)
    account_id: int = Field(sa_column=Column(BigInteger, nullable=False))
    created_at: float
    expires_at: float = Field(index=True)
    ended_at: float | None = None
