"""github.com's issue pages, as the stand-in's web host serves them: a repository's issues, and
an issue with its comments rendered from Markdown the way GitHub shows them (CommonMark with
tables and strikethrough; HTML comments hidden, any other HTML shown as typed, never run).

railyard's status comment lives on the issue, so this is where a person reads it.
"""

from __future__ import annotations

import html
import re

from aiohttp import web
from markdown_it import MarkdownIt

from github_standin.lookups import STATE
from github_standin.state import Repository

_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
_HIDDEN = re.compile(r"<!--.*?-->", re.DOTALL)  # GitHub renders HTML comments as nothing
_STYLE = (
    "body { font: 15px/1.5 system-ui, sans-serif; max-width: 56rem; margin: 2rem auto; padding: 0 1rem }"
    " .comment { border: 1px solid #d0d7de; border-radius: 6px; margin: 1rem 0 }"
    " .comment > header { background: #f6f8fa; border-bottom: 1px solid #d0d7de; padding: .4rem .8rem }"
    " .comment > div { padding: 0 .8rem } table { border-collapse: collapse }"
    " td, th { border: 1px solid #d0d7de; padding: 2px 6px } .bot { color: #57606a }"
    " code { background: #eff1f3; padding: 0 3px; border-radius: 4px }"
)


def render_markdown(text: str) -> str:
    """A comment's body as GitHub shows it: HTML comments hidden, Markdown rendered, raw HTML escaped."""
    return str(_MARKDOWN.render(_HIDDEN.sub("", text)))


def _page(title: str, body: str) -> web.Response:
    document = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_STYLE}</style></head><body>{body}</body></html>"
    )
    return web.Response(text=document, content_type="text/html")


def _repository(request: web.Request) -> Repository:
    name = f"{request.match_info['owner']}/{request.match_info['repo']}"
    found = request.app[STATE].repository(name)
    if found is None or found.private:  # a private repository is not shown to a visitor
        raise web.HTTPNotFound(text="Not Found")
    return found


async def issue_list(request: web.Request) -> web.Response:
    """`/{owner}/{repo}/issues`: the repository's issues, oldest first."""
    repository = _repository(request)
    name = html.escape(repository.full_name)
    rows = "".join(
        f"<li><a href='/{name}/issues/{issue.number}'>#{issue.number} {html.escape(issue.title)}</a>"
        f" <span class='bot'>({issue.state})</span></li>"
        for issue in sorted(repository.issues.values(), key=lambda i: i.number)
        if issue.number not in repository.pulls
    )
    return _page(f"Issues · {repository.full_name}", f"<h1>{name}: issues</h1><ul>{rows}</ul>")


async def issue_page(request: web.Request) -> web.Response:
    """`/{owner}/{repo}/issues/{number}`: the issue's body and every comment, rendered."""
    repository, number = _repository(request), int(request.match_info["number"])
    issue = repository.issues.get(number)
    if issue is None:
        raise web.HTTPNotFound(text="Not Found")
    state, name = request.app[STATE], html.escape(repository.full_name)
    comments = sorted(
        (c for c in state.comments.values() if (c.repo, c.issue_number) == (repository.full_name, number)),
        key=lambda c: c.id,
    )
    parts = [
        f"<p><a href='/{name}/issues'>{name}</a></p>",
        f"<h1>{html.escape(issue.title)} <span class='bot'>#{number}</span></h1>",
        _comment(issue.user, "opened this issue", issue.body or "*No description provided.*", "issue"),
    ]
    for c in comments:
        edited = " (edited)" if c.updated_at != c.created_at else ""
        bot = c.user_type == "Bot"
        parts.append(_comment(c.user, f"commented{edited}", c.body, f"issuecomment-{c.id}", bot=bot))
    return _page(f"{issue.title} · Issue #{number} · {repository.full_name}", "".join(parts))


def _comment(login: str, verb: str, body: str, anchor: str, *, bot: bool = False) -> str:
    badge = " <span class='bot'>bot</span>" if bot else ""
    return (
        f"<section class='comment' id='{anchor}'><header><b>{html.escape(login)}</b>{badge} {verb}</header>"
        f"<div>{render_markdown(body)}</div></section>"
    )
