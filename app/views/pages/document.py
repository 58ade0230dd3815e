"""The pages' shell (one HTML document with the site header) and the short pages of a heading
and a paragraph: not found, sign-in not enabled or not finished, GitHub unavailable, and the
list of repositories the person can read."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from markupsafe import Markup

# Served by `app/web/` from this server only, which is all the Content-Security-Policy allows.
STYLESHEET_PATH = "/assets/railyard.css"


class Repository(Protocol):
    """A repository the person can read, as the list of repositories shows it."""

    @property
    def full_name(self) -> str:
        """`owner/name`."""
        ...

    @property
    def private(self) -> bool:
        """Whether GitHub says it is private."""
        ...


def words(value: str) -> str:
    """A state or code as words: `pull_request_open` -> `pull request open`."""
    return value.replace("_", " ")


def document(title: str, body: Markup, *, login: str | None = None, csrf: str | None = None) -> Markup:
    """A whole page: the site header (with who is signed in and a sign-out form), then `body`."""
    who = Markup("")
    if login is not None and csrf is not None:
        who = Markup(
            '<div class="who">Signed in as <strong>{}</strong> '
            '<form class="inline" method="post" action="/logout">'
            '<input type="hidden" name="csrf" value="{}"><button type="submit">Sign out</button></form></div>'
        ).format(login, csrf)
    return Markup(
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        '<link rel="icon" href="data:,"><title>{} · railyard</title><link rel="stylesheet" href="{}">'
        "</head><body>"
        '<header class="site"><a href="/tickets"><strong>railyard</strong></a>{}</header>'
        "<main>{}</main></body></html>"
    ).format(title, STYLESHEET_PATH, who, body)


def simple(title: str, body: Markup, **who: str | None) -> Markup:
    """A page of a heading and `body`."""
    return document(title, Markup("<h1>{}</h1>{}").format(title, body), **who)


def not_found(**who: str | None) -> Markup:
    """The one page for anything missing or not readable: it says nothing about which."""
    text = Markup(
        '<p>There is nothing here, or you cannot read it. <a href="/tickets">Your repositories</a>.</p>'
    )
    return simple("Not found", text, **who)


def sign_in_disabled() -> Markup:
    """What the pages say while the app's OAuth client is not configured."""
    return simple(
        "Sign-in is not enabled",
        Markup(
            "<p>The ticket pages need sign-in with GitHub, through the app's own OAuth client. Set "
            "<code>GITHUB_CLIENT_ID</code> and <code>GITHUB_CLIENT_SECRET</code> (the app's settings page on "
            "GitHub shows the client id and makes secrets; the setup page saves both when it registers the "
            "app), add <code>{}/login/callback</code> as the app's callback URL, then restart "
            "<code>railyard serve</code>. For GitHub Enterprise Server set <code>GITHUB_WEB_URL</code> "
            "too.</p>"
        ).format(Markup("PUBLIC_URL")),
    )


def sign_in_refused(reason: str) -> Markup:
    """Why a sign-in did not finish, with the way to start again."""
    return simple(
        "Sign-in did not finish",
        Markup('<p>{}</p><p><a href="/login">Sign in again</a>.</p>').format(reason),
    )


def too_many_pages(retry_after: int, **who: str | None) -> Markup:
    """Past the account's page reads of the minute: nothing of the record, when to come back."""
    text = Markup(
        "<p>Your account has asked for more pages this minute than railyard serves one account "
        "(a report or an attention filter counts for more). Try again in {} seconds.</p>"
    ).format(retry_after)
    return simple("Too many pages at once", text, **who)


def github_unavailable(message: str) -> Markup:
    """GitHub could not say what the person may read, so the page shows nothing of the record."""
    return document("GitHub unavailable", Markup("<h1>GitHub did not answer</h1><p>{}</p>").format(message))


def repositories(readable: Iterable[Repository], **who: str | None) -> Markup:
    """`/tickets`: the repositories the person can read, each linking to its board."""
    rows = Markup("").join(
        Markup('<li><a href="/tickets/{}">{}</a>{}</li>').format(
            r.full_name, r.full_name, Markup(' <span class="muted">(private)</span>') if r.private else ""
        )
        for r in sorted(readable, key=lambda r: r.full_name.lower())
    )
    body = (
        Markup("<h1>Your repositories</h1><ul>{}</ul>").format(rows)
        if rows
        else Markup(
            "<h1>Your repositories</h1><p>GitHub lists no repository of this app's installations "
            "that you can read.</p>"
        )
    )
    return document("Your repositories", body, **who)
