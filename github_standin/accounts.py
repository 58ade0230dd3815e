"""What the GitHub stand-in knows about people signing in: the app's OAuth client, the person
who approves the authorization page, the codes and user tokens it issued."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta

USER_TOKEN_LIFETIME = timedelta(hours=8)  # GitHub Apps' expiring user tokens last 8 hours


@dataclass
class UserToken:
    token: str
    login: str
    expires_at: datetime


@dataclass
class OAuthState:
    """The app's OAuth client (as the manifest conversion returns it) and who is signed in on GitHub."""

    client_id: str = "Iv1.8a61f9b3a7aba766"
    client_secret: str = "1726be1638095a19edd134c77bde3aa2ece1e5d8"
    # The account signed in on github.com in the browser: it approves the app at once.
    approving: str | None = None
    codes: dict[str, tuple[str, str]] = field(default_factory=dict)  # code -> (login, redirect_uri)
    tokens: dict[str, UserToken] = field(default_factory=dict)

    def issue_code(self, login: str, redirect_uri: str) -> str:
        """A one-time authorization code for `login`, bound to the redirect it was issued for."""
        code = secrets.token_hex(10)
        self.codes[code] = (login, redirect_uri)
        return code

    def issue_token(self, login: str, now: datetime) -> UserToken:
        """A user-to-server token (`ghu_`) for `login`, valid for eight hours."""
        token = UserToken(f"ghu_{secrets.token_hex(18)}", login, now + USER_TOKEN_LIFETIME)
        self.tokens[token.token] = token
        return token

    def user_of(self, credential: str, now: datetime) -> str | None:
        """The login a live user token belongs to, or None."""
        token = self.tokens.get(credential)
        return token.login if token is not None and token.expires_at > now else None
