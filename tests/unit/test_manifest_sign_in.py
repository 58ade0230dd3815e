"""The manifest the setup page posts registers the sign-in's callback (`callback_urls`): GitHub
sends a person back only to one of an app's callback URLs."""

from __future__ import annotations

from app.web.manifest import load_manifest, manifest_for


def test_the_posted_manifest_registers_the_sign_in_callback() -> None:
    """SPEC: sign-in is the OAuth web flow with the app's own client id and secret, "saved by the
    setup page from the manifest conversion"; /login sends redirect_uri=PUBLIC_URL/login/callback,
    which GitHub accepts only when it is one of the app's callback URLs (manifest `callback_urls`).
    The app the setup page registers must therefore carry it, or sign-in fails at GitHub."""
    filled = manifest_for("https://railyard.example.com/", load_manifest())
    assert "https://railyard.example.com/login/callback" in filled.get("callback_urls", [])
