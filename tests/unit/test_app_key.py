"""The app's private key: read and checked once, and the JWTs made with it verify."""

from __future__ import annotations

import jwt
import jwt.algorithms as jwt_algorithms
import pytest
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from pydantic import SecretStr

from app.github.api_errors import ConfigurationError
from app.github.app_key import load_private_key, read_private_key
from app.github.client import GitHubClient
from app.runtime.metrics import Metrics
from app.settings import Settings
from support.servers import private_key_pem


def settings_with(key: str) -> Settings:
    return Settings(_env_file=None, APP_ID=42, PRIVATE_KEY=SecretStr(key), WEBHOOK_SECRET="s")


def test_the_loaded_key_signs_jwts_that_the_pem_verifies() -> None:
    settings = settings_with(private_key_pem().replace("\n", "\\n"))  # as an env file holds it

    key = load_private_key(settings)

    assert isinstance(key, RSAPrivateKey)
    token = jwt.encode({"iss": "42"}, key, algorithm="RS256")  # what githubkit asks PyJWT for
    public = key.public_key()
    assert jwt.decode(token, public, algorithms=["RS256"]) == {"iss": "42"}
    assert read_private_key(settings) == private_key_pem()


def test_the_client_parses_the_pem_once_not_for_every_jwt(monkeypatch: pytest.MonkeyPatch) -> None:
    """githubkit hands its key to PyJWT for every JWT; a PEM there would be parsed, with RSA's
    checks (29 ms of CPU), each time."""
    parsed = []
    real = jwt_algorithms.load_pem_private_key  # type: ignore[attr-defined]

    def counted(*args: object, **kwargs: object) -> object:
        parsed.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(jwt_algorithms, "load_pem_private_key", counted)
    client = GitHubClient(settings_with(private_key_pem()), Metrics())
    auth = client._strategy.get_auth_flow(client._github)
    tokens = [auth._create_jwt() for _ in range(3)]  # type: ignore[attr-defined]

    assert isinstance(client._strategy.private_key, RSAPrivateKey)
    assert parsed == [], "PyJWT was given a PEM to parse"
    public = client._strategy.private_key.public_key()
    assert all(jwt.decode(token, public, algorithms=["RS256"])["iss"] == "42" for token in tokens)


def test_a_key_that_is_not_a_pem_is_refused_without_echoing_it() -> None:
    with pytest.raises(ConfigurationError) as refused:
        load_private_key(settings_with("not-a-key-but-a-secret"))

    assert "PRIVATE_KEY is not a PEM private key" in str(refused.value)
    assert "not-a-key-but-a-secret" not in str(refused.value)
