"""Setup mode: the one-time page, GitHub's redirect back (respx answers), and the saved `.env`."""

from __future__ import annotations

import json
import stat
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import respx

from app.github.client import read_private_key
from app.settings import Settings
from app.web.manifest import load_manifest
from app.web.setup import SetupFlow, start_setup
from tests.fakes import GITHUB_API, ServerHandle, app_settings, manifest_conversion, running_server

TOKEN = "one-time-token"
PUBLIC_URL = "https://railyard.example.com"
CONVERSION = f"{GITHUB_API}/app-manifests/a1b2c3/conversions"


@dataclass
class Form:
    """One `<form>` of a page: where it goes and its inputs."""

    method: str
    action: str
    inputs: dict[str, str] = field(default_factory=dict)


class Forms(HTMLParser):
    """The forms of an HTML page, attribute values unescaped as a browser would."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.forms: list[Form] = []
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "form":
            self.forms.append(Form(values.get("method", "get"), values.get("action", "")))
        elif tag == "input" and self.forms:
            self.forms[-1].inputs[values.get("name", "")] = values.get("value", "")


def setup_settings(tmp_path: Path, **overrides: str) -> Settings:
    """Settings without app credentials: setup mode."""
    values = {
        "APP_ID": "",
        "PRIVATE_KEY": "",
        "WEBHOOK_SECRET": "",
        "GITHUB_API_URL": GITHUB_API,
        **overrides,
    }
    values.setdefault("PUBLIC_URL", PUBLIC_URL)
    return app_settings(f"sqlite:///{tmp_path}/railyard.db", **values)


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[ServerHandle]:
    """A server in setup mode whose token is TOKEN and whose `.env` goes to tmp_path."""
    settings = setup_settings(tmp_path)
    async with running_server(settings, setup=start_setup(settings, TOKEN, tmp_path / ".env")) as handle:
        yield handle


async def registration_form(server: ServerHandle, query: str = f"?token={TOKEN}") -> Form:
    """The form that posts the manifest to GitHub, from the setup page."""
    async with server.client.get(f"/{query}") as response:
        assert response.status == 200
        page = await response.text()
    [form] = [form for form in Forms(page).forms if "manifest" in form.inputs]
    return form


def state_of(form: Form) -> str:
    """The `state` the form sends to GitHub (GitHub sends it back on the redirect)."""
    [state] = parse_qs(urlsplit(form.action).query)["state"]
    return state


async def callback(server: ServerHandle, query: str) -> tuple[int, str]:
    """GitHub's redirect back to the server, as the browser follows it."""
    async with server.client.get(f"/setup/callback?{query}") as response:
        return response.status, await response.text()


async def test_the_setup_page_without_the_token_is_refused(server: ServerHandle) -> None:
    """No token or a wrong one: 403, a message saying where the link is, and no form."""
    for query in ("", "?token=", "?token=guess"):
        async with server.client.get(f"/{query}") as response:
            page = await response.text()
        assert response.status == 403
        assert "one-time link" in page and "<form" not in page


async def test_the_setup_page_posts_the_manifest_and_a_state_to_github(server: ServerHandle) -> None:
    """The form goes to GitHub's new-app page with the manifest from app.yml, URLs from PUBLIC_URL."""
    form = await registration_form(server)
    manifest = json.loads(form.inputs["manifest"])
    assert form.method == "post"
    # GITHUB_API is a GitHub Enterprise Server style URL: the form goes to that host.
    assert form.action.startswith("http://127.0.0.1:9/settings/apps/new?state=")
    assert len(state_of(form)) >= 32
    assert manifest["default_permissions"] == load_manifest()["default_permissions"]
    assert manifest["default_events"] == load_manifest()["default_events"]
    assert manifest["hook_attributes"] == {"url": f"{PUBLIC_URL}/webhooks", "active": True}
    assert manifest["redirect_url"] == f"{PUBLIC_URL}/setup/callback"


async def test_each_visit_to_the_setup_page_gets_a_new_state(server: ServerHandle) -> None:
    """A state is unguessable and not reused between forms."""
    assert state_of(await registration_form(server)) != state_of(await registration_form(server))


async def test_the_setup_page_never_leaks_its_token_as_a_referer(server: ServerHandle) -> None:
    """The form posts to GitHub from a URL holding the token: the page forbids sending it along."""
    async with server.client.get(f"/?token={TOKEN}") as response:
        assert response.headers["Referrer-Policy"] == "no-referrer"
        assert response.headers["Cache-Control"] == "no-store"
        assert response.content_type == "text/html"


async def test_an_organization_gets_the_organizations_registration_page(server: ServerHandle) -> None:
    """`?org=NAME` registers the app for that organization instead of the user's account."""
    form = await registration_form(server, f"?token={TOKEN}&org=my-org")
    assert form.action.startswith("http://127.0.0.1:9/organizations/my-org/settings/apps/new?state=")


async def test_an_organization_name_that_is_not_one_is_refused(server: ServerHandle) -> None:
    """400 and an escaped message, never a form pointing somewhere odd."""
    async with server.client.get("/", params={"token": TOKEN, "org": "<x>/../y"}) as response:
        page = await response.text()
    assert response.status == 400
    assert "&lt;x&gt;" in page and "<x>" not in page


async def test_page_values_are_html_escaped(tmp_path: Path) -> None:
    """A PUBLIC_URL with markup in it reaches GitHub unchanged and never becomes markup on the page."""
    odd = 'https://example.com/a"><script>alert(1)</script>'
    settings = setup_settings(tmp_path, PUBLIC_URL=odd)
    async with running_server(settings, setup=start_setup(settings, TOKEN, tmp_path / ".env")) as server:
        async with server.client.get(f"/?token={TOKEN}") as response:
            page = await response.text()
        form = await registration_form(server)
    assert "<script>" not in page
    assert json.loads(form.inputs["manifest"])["url"] == odd


async def test_without_public_url_the_page_says_to_set_it(tmp_path: Path) -> None:
    """GitHub needs a reachable webhook URL: the page explains instead of posting a useless one."""
    settings = setup_settings(tmp_path, PUBLIC_URL="")
    async with running_server(settings, setup=start_setup(settings, TOKEN, tmp_path / ".env")) as server:
        async with server.client.get(f"/?token={TOKEN}") as response:
            page = await response.text()
    assert response.status == 200
    assert "PUBLIC_URL" in page and "manifest" not in page


@respx.mock
async def test_a_registration_saves_the_credentials_to_env_with_mode_0600(
    server: ServerHandle, tmp_path: Path
) -> None:
    """The code is exchanged, `.env` gets the app, its webhook secret and OAuth client; other lines stay."""
    env = tmp_path / ".env"
    env.write_text(f"# mine\nPUBLIC_URL={PUBLIC_URL}\nAPP_ID=\nDATABASE_URL=sqlite:///kept.db\n")
    answer = manifest_conversion()
    route = respx.post(CONVERSION).mock(return_value=httpx.Response(201, json=answer))
    state = state_of(await registration_form(server))
    status, page = await callback(server, f"code=a1b2c3&state={state}")
    assert (status, route.call_count) == (200, 1)
    assert stat.S_IMODE(env.stat().st_mode) == 0o600
    assert env.read_text().startswith(f"# mine\nPUBLIC_URL={PUBLIC_URL}\nAPP_ID=")
    saved = Settings(_env_file=env)  # type: ignore[call-arg]
    assert saved.app_id == answer["id"] and saved.configured
    assert saved.webhook_secret is not None
    assert saved.webhook_secret.get_secret_value() == answer["webhook_secret"]
    assert read_private_key(saved) == answer["pem"]
    assert saved.database_url == "sqlite:///kept.db"
    assert saved.github_client_id == answer["client_id"] and saved.github_client_secret is not None
    assert saved.github_client_secret.get_secret_value() == answer["client_secret"] and saved.sign_in
    assert answer["client_secret"] not in page
    assert "https://github.com/apps/octoapp/installations/new" in page and "railyard serve" in page
    assert answer["pem"].splitlines()[1] not in page and answer["webhook_secret"] not in page


@respx.mock
async def test_after_saving_the_token_no_longer_opens_the_page(server: ServerHandle) -> None:
    """Once registered, the page and the callback only say to restart."""
    respx.post(CONVERSION).mock(return_value=httpx.Response(201, json=manifest_conversion()))
    state = state_of(await registration_form(server))
    assert (await callback(server, f"code=a1b2c3&state={state}"))[0] == 200
    async with server.client.get(f"/?token={TOKEN}") as response:
        page = await response.text()
    assert response.status == 404 and "<form" not in page and "Restart" in page
    assert (await callback(server, f"code=a1b2c3&state={state}"))[0] == 404


@respx.mock
async def test_a_wrong_state_is_refused_and_github_is_not_asked(server: ServerHandle, tmp_path: Path) -> None:
    """A redirect this server did not start (or a forged one) writes nothing."""
    route = respx.post(CONVERSION).mock(return_value=httpx.Response(201, json=manifest_conversion()))
    await registration_form(server)
    for query in ("code=a1b2c3&state=forged", "code=a1b2c3"):
        status, page = await callback(server, query)
        assert status == 403 and "state" in page
    assert not route.called
    assert not (tmp_path / ".env").exists()


@respx.mock
async def test_an_expired_code_is_reported_and_nothing_is_written(
    server: ServerHandle, tmp_path: Path
) -> None:
    """GitHub's 404 for a used or expired code becomes a page saying to start again."""
    respx.post(CONVERSION).mock(
        return_value=httpx.Response(
            404, json={"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}
        )
    )
    state = state_of(await registration_form(server))
    status, page = await callback(server, f"code=a1b2c3&state={state}")
    assert status == 400
    assert "Not Found" in page and "expire" in page
    assert not (tmp_path / ".env").exists()


async def test_a_code_that_cannot_be_one_is_refused_before_asking_github(
    server: ServerHandle, tmp_path: Path
) -> None:
    """The code goes into a URL path, so anything but GitHub's code characters is refused."""
    state = state_of(await registration_form(server))
    with respx.mock:  # any request to GitHub would fail as unmocked
        status, _ = await callback(server, f"code=..%2Fapp&state={state}")
    assert status == 400
    assert not (tmp_path / ".env").exists()


@respx.mock
async def test_github_unreachable_is_reported_and_a_retry_can_succeed(
    server: ServerHandle, tmp_path: Path
) -> None:
    """A connection failure writes nothing and keeps the state, so reloading the page works."""
    route = respx.post(CONVERSION)
    route.side_effect = [
        httpx.ConnectError("connection refused"),
        httpx.Response(201, json=manifest_conversion()),
    ]
    state = state_of(await registration_form(server))
    status, page = await callback(server, f"code=a1b2c3&state={state}")
    assert status == 502 and "could not be reached" in page
    assert not (tmp_path / ".env").exists()
    assert (await callback(server, f"code=a1b2c3&state={state}"))[0] == 200
    assert (tmp_path / ".env").exists()


@respx.mock
async def test_a_github_error_is_reported_and_nothing_is_written(
    server: ServerHandle, tmp_path: Path
) -> None:
    """A 5xx, or an answer without a usable key, leaves `.env` alone."""
    respx.post(CONVERSION).mock(
        side_effect=[
            httpx.Response(503, json={"message": "Service Unavailable"}),
            httpx.Response(201, json=manifest_conversion(pem="not a key")),
        ]
    )
    state = state_of(await registration_form(server))
    status, page = await callback(server, f"code=a1b2c3&state={state}")
    assert status == 502 and "503" in page
    status, page = await callback(server, f"code=a1b2c3&state={state}")
    assert status == 502 and "private key" in page
    assert not (tmp_path / ".env").exists()


async def test_webhooks_still_answer_503_in_setup_mode(server: ServerHandle) -> None:
    """The setup page does not change SPEC's answer for deliveries before configuration."""
    response = await server.deliver("ping", b"{}")
    assert response.status == 503


def test_a_setup_flow_makes_its_own_unguessable_token() -> None:
    """Without a given token each flow draws a fresh one."""
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    first, second = SetupFlow(settings, {}), SetupFlow(settings, {})
    assert first.token != second.token and len(first.token) >= 32
