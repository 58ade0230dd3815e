"""The setup pages' words and HTML (setup mode, before the app has credentials): plain
documents with no external assets, every value escaped. `app.web.setup` sends them."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def paragraph(text: str) -> str:
    """One escaped paragraph (an error's message)."""
    return f"<p>{_e(text)}</p>"


SETUP_LINK_REQUIRED = (
    "<p>railyard is in setup mode. Open the one-time link that <code>railyard serve</code> "
    "printed when it started (it ends in <code>?token=…</code>).</p>"
)
PUBLIC_URL_NEEDED = (
    "<p>GitHub needs to know where to send webhooks and where to send you back after registering. "
    "Set <code>PUBLIC_URL</code> (in the environment or in <code>.env</code>) to the address at which "
    "GitHub reaches this server, for example <code>https://railyard.example.com</code>, then restart "
    "<code>railyard serve</code> and open the new link it prints.</p>"
)
WRONG_STATE = (
    "<p>This registration was not started from this server's setup page (its <code>state</code> "
    "does not match one the page issued), or the server was restarted since. Nothing was saved. "
    "Start again from the setup link that <code>railyard serve</code> printed.</p>"
)
# Anyone may see this page, so it names no path: only the operator needs to know it.
ALREADY_SAVED = "<p>The app's credentials are saved. Restart <code>railyard serve</code> to use them.</p>"


def registration_form(
    manifest: Mapping[str, Any], manifest_json: str, action: str, organization: str | None, token: str
) -> str:
    """The form that posts the manifest to GitHub, and the one that picks an organization."""
    permissions = "".join(
        f"<li><code>{_e(name)}</code>: {_e(level)}</li>"
        for name, level in manifest["default_permissions"].items()
    )
    events = ", ".join(f"<code>{_e(event)}</code>" for event in manifest["default_events"])
    owner = f"the organization <strong>{_e(organization)}</strong>" if organization else "your account"
    return f"""
<p>This registers a new GitHub App for {owner} from <code>app.yml</code>. GitHub will show you
the app before creating it; its webhooks will go to <code>{_e(manifest["hook_attributes"]["url"])}</code>.</p>
<h2>Permissions</h2><ul>{permissions}</ul>
<h2>Events</h2><p>{events}</p>
<form method="post" action="{_e(action)}">
  <input type="hidden" name="manifest" value="{_e(manifest_json)}">
  <button type="submit" id="register">Register on GitHub</button>
</form>
<h2>Register for an organization instead</h2>
<form method="get" action="/">
  <input type="hidden" name="token" value="{_e(token)}">
  <label>Organization
    <input name="org" value="{_e(organization or "")}" pattern="[A-Za-z0-9][A-Za-z0-9\\-]*"></label>
  <button type="submit">Use this organization</button>
</form>"""


def registered(app_data: Mapping[str, Any], app_id: str, env_path: str, secret_given: bool) -> str:
    """What the operator does next, once GitHub created the app and its credentials are saved."""
    name, html_url = str(app_data.get("name") or "railyard"), str(app_data.get("html_url") or "")
    install = (
        f'<a href="{_e(html_url)}/installations/new">{_e(html_url)}/installations/new</a>'
        if html_url.startswith(("https://", "http://"))
        else "the app's page on GitHub"
    )
    missing = (
        ""
        if secret_given
        else "<p><strong>GitHub returned no webhook secret:</strong> set one in the app's settings "
        "and add it to <code>.env</code> as <code>WEBHOOK_SECRET</code>.</p>"
    )
    return f"""
<p>GitHub created the app <strong>{_e(name)}</strong> (id {_e(app_id)}). Its id, private key,
webhook secret and OAuth client (for sign-in) are saved in <code>{_e(env_path)}</code>,
readable only by you.</p>{missing}
<ol>
  <li>Restart <code>railyard serve</code>: it reads <code>.env</code> at start and leaves setup mode.</li>
  <li>Install the app on the repositories it should track: {install}.</li>
</ol>
<p>This setup link no longer works.</p>"""


def setup_document(title: str, body: str) -> str:
    """A whole page around `body` (already HTML), with its own small stylesheet."""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>railyard · {_e(title)}</title>"
        "<style>body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;"
        "line-height:1.5}code{background:#f3f3f3;padding:0 .2em}</style>"
        f"</head><body><h1>{_e(title)}</h1>{body}</body></html>"
    )
