"""Issue 14 end to end, through the real server with signed webhooks: commands GitHub shows as
quoted or as code do nothing (one of them used to accept a delivery), and the replies the app
writes render clean in a CommonMark renderer."""

from __future__ import annotations

import html
import re

import pytest
from markdown_it import MarkdownIt

from support.world import World

_MARKDOWN = MarkdownIt("commonmark")
_CODE = re.compile(r"<code>(.*?)</code>", re.S)


def shown(body: str) -> str:
    """What a reader reads of `body` rendered, code spans included, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", _MARKDOWN.render(body)))


async def delivered(world: World) -> None:
    """Ticket 12 published, claimed and delivered by cody."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.say("cody", "/deliver branch=agent/12-fix\nDone.")
    assert world.ticket().work.value == "delivered"


@pytest.mark.parametrize(
    "body",
    [
        "- > quoted from the review\n/accept",
        "1. > see above\n   /accept",
        "text `start\n/accept\nend` text",
    ],
)
async def test_a_quoted_or_code_accept_does_not_accept_the_delivery(world: World, body: str) -> None:
    """The issue's three comments: GitHub shows each `/accept` as quoted or as code."""
    await delivered(world)
    await world.say("rita", body)
    assert world.ticket().work.value == "delivered" and world.replies() == []


async def test_an_accept_on_a_continuation_line_runs(world: World) -> None:
    """`Thanks!` then `/accept`: GitHub shows `/accept` at the start of a line; SPEC runs it."""
    await delivered(world)
    await world.say("rita", "Thanks!\n/accept")
    assert world.ticket().work.value == "accepted"


async def test_a_refusal_reply_renders_as_one_mention_a_code_span_and_a_sentence(world: World) -> None:
    """nora's refused `/send-back`: `@nora: `/send-back ...``, then `Refused: ...`, no `>` shown."""
    line = "/send-back see <b>this</b>, @rita > `x`"
    await world.say("rachel", "/publish")
    await world.say("nora", line)
    [reply] = world.replies()
    rendered = _MARKDOWN.render(reply)
    assert "<blockquote>" not in rendered
    assert html.unescape(_CODE.findall(rendered)[0]) == line
    text = shown(_CODE.sub("", rendered))
    assert text.startswith("@nora: ") and text.count("@nora") == 1 + text.count("@\u2060nora")
    assert "\nRefused: " in text and ">" not in text and "&gt;" not in text


async def test_a_near_miss_reply_quotes_the_whole_line(world: World) -> None:
    """`/acept looks good` was quoted as `/`; now the reply shows the line and the suggestion."""
    await delivered(world)
    await world.say("rita", "/acept looks good")
    assert world.ticket().work.value == "delivered"
    text = shown(world.replies()[-1])
    assert text.strip() == (
        "@rita: /acept looks good\n/acept is not a railyard command. Did you mean /accept?"
    )


async def test_help_replies_with_each_commands_usage(world: World) -> None:
    """`/help` through the server lists `/deliver`'s arguments and what it needs."""
    await world.say("nora", "/help")
    text = shown(world.replies()[-1])
    usage = (
        "/deliver [branch=NAME] [commit=SHA] [artifact=URL ...] [model=NAME] [tokens_in=N] "
        "[tokens_out=N] [cost=USD] [rev=N] [#PR] SUMMARY: needs a summary"
    )
    assert usage in text
