"""The app's private key, read from the settings and checked, never echoed."""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization

from app.github.api_errors import ConfigurationError
from app.settings import Settings


def read_private_key(settings: Settings) -> str:
    """The app's PEM key from PRIVATE_KEY (escaped newlines allowed) or PRIVATE_KEY_PATH, checked."""
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
        serialization.load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError):
        # Never echo the key itself: say what is wrong with it.
        raise ConfigurationError(
            f"{source} is not a PEM private key (download a new .pem from the app's settings page)"
        ) from None
    return pem
