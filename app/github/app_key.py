"""The app's private key, read from the settings and checked, never echoed."""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

from app.github.api_errors import ConfigurationError
from app.settings import Settings


def read_private_key(settings: Settings) -> str:
    """The app's PEM key from PRIVATE_KEY (escaped newlines allowed) or PRIVATE_KEY_PATH, checked."""
    return _read(settings)[0]


def load_private_key(settings: Settings) -> PrivateKeyTypes:
    """The app's key, read, checked and loaded once (see `read_private_key`).

    Loading a PEM checks the RSA key, 29 ms of CPU for a 2048-bit key (`docs/benchmarks.md`):
    githubkit hands its key to PyJWT, which loads a PEM on every new JWT but takes a loaded
    key as it is, so the client is given this one.
    """
    return _read(settings)[1]


def _read(settings: Settings) -> tuple[str, PrivateKeyTypes]:
    if settings.private_key is not None:
        pem, source = settings.private_key.get_secret_value().replace("\\n", "\n"), "PRIVATE_KEY"
    elif settings.private_key_path is not None:
        try:
            pem, source = settings.private_key_path.read_text(), "PRIVATE_KEY_PATH"
        except OSError as error:
            raise ConfigurationError(f"PRIVATE_KEY_PATH cannot be read: {error.strerror}") from None
    else:
        raise ConfigurationError("PRIVATE_KEY or PRIVATE_KEY_PATH is required")
    try:
        key = serialization.load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError):
        # Never echo the key itself: say what is wrong with it.
        raise ConfigurationError(
            f"{source} is not a PEM private key (download a new .pem from the app's settings page)"
        ) from None
    return pem, key
