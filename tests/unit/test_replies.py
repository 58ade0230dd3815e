"""Replies render as meant (SPEC: "What people see"): every reply kind goes through a real
CommonMark renderer (markdown-it-py), and the rendered HTML mentions the author once, quotes
the answered line whole, and shows no stray `>` or `&gt;`; `/help` lists every command with
its usage."""

from __future__ import annotations

import html
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from app.views.markdown import WORD_JOINER, code_span
from app.views.replies_text import help_text, reopened, reply_body, sent_back
from handlers.answers import (
    ArtifactNotFound,
    CannotRunYet,
    Help,
    Ignored,
    Malformed,
    Message,
    NearMiss,
    PullTarget,
    Refused,
    ReopenedNotice,
    Reply,
    SentBackNotice,
    StatusAnswer,
)
from policies.parser import COMMAND_WORDS, NEEDS, USAGE, parse_comment
from policies.refusals import Refusal, RefusalCode

_MARKDOWN = MarkdownIt("commonmark")
_CODE = re.compile(r"<code>(.*?)</code>", re.S)
_TAG = re.compile(r"<[^>]+>")
_LIVE_MENTION = re.compile(r"(?<![\w`])@([A-Za-z0-9-]+)(?!\u2060)")

REASON = "/accept on a delivered ticket needs reviewer; @mallory holds none of them."
MESSAGES: list[Message] = [
    Refused(Refusal(RefusalCode.NOT_ALLOWED, REASON, "Ask someone who is reviewer.")),
    Refused(Refusal(RefusalCode.CONFIG_ERROR, "/claim: bad config:\nline 3: unknown key `x`", "Fix it.")),
    ArtifactNotFound("branch", "feature/<x>", "octo/repo"),
    NearMiss("acept", "accept"),
    Malformed("/claim does not know '--chek-in'. Did you mean --check-in? Use: /claim [--check-in M]"),
    CannotRunYet("GitHub did not answer"),
    PullTarget(None, (3, 4)),
]


def render(body: str) -> str:
    """The HTML GitHub-like CommonMark makes of `body`."""
    return _MARKDOWN.render(body)


def shown_text(rendered: str) -> str:
    """What a reader reads: the HTML's text, entities decoded."""
    return html.unescape(_TAG.sub("", rendered))


def live_mentions(rendered: str) -> list[str]:
    """The logins GitHub would notify: `@name` outside code, not followed by a word joiner."""
    return _LIVE_MENTION.findall(shown_text(_CODE.sub("", rendered)))


def reply(line: str, message: Message, author: str = "mallory") -> Reply:
    """A reply to `author`'s comment whose answered line is `line`."""
    return Reply(1, "octo/repo", 12, 99, author, 7, line, message)


@pytest.mark.parametrize("message", MESSAGES, ids=lambda message: type(message).__name__)
def test_every_reply_kind_mentions_the_author_once_and_quotes_the_line_whole(message: Message) -> None:
    """`@mallory: `/accept --self @bob <b>``: one live mention, the line shown exactly as typed."""
    line = "/accept --self @bob <b>x</b> `tick` > arrow"
    rendered = render(reply_body(reply(line, message)))
    assert live_mentions(rendered) == ["mallory"]
    assert html.unescape(_CODE.findall(rendered)[0]) == line
    assert "<blockquote>" not in rendered or isinstance(message, Refused)  # only a config's details
    text = shown_text(_CODE.sub("", rendered))
    assert ">" not in text and "&gt;" not in text and "&amp;" not in text


def test_a_refusal_is_one_sentence_with_no_quote_mark() -> None:
    """The issue's reply: `Refused: > /accept needs ...` showed a literal `>`; now it is a sentence."""
    rendered = render(reply_body(reply("/accept", MESSAGES[0])))
    assert shown_text(rendered).replace("\u2060", "").splitlines()[:3] == [
        "@mallory: /accept",
        f"Refused: {REASON}",  # its @mallory shown, but dead: the author is mentioned once
        "Ask someone who is reviewer.",
    ]
    assert "<blockquote>" not in rendered


def test_a_config_refusal_quotes_its_details_as_a_block_of_their_own() -> None:
    """The first line is the sentence; the config's problems follow as a real quote block."""
    rendered = render(reply_body(reply("/claim", MESSAGES[1])))
    assert "<p>Refused: /claim: bad config:</p>" in rendered
    assert "<blockquote>\n<p>line 3: unknown key `x`</p>\n</blockquote>" in rendered


def test_a_near_miss_is_quoted_whole() -> None:
    """`/acept please` was quoted as `/`: the parser answers with the whole line."""
    parsed = parse_comment("Thanks!\n\n/acept please")
    assert parsed.near_miss == ("acept", "accept")
    assert parsed.line == "/acept please"
    rendered = render(reply_body(reply(parsed.line, NearMiss(*parsed.near_miss))))
    assert shown_text(rendered).strip() == (
        "@mallory: /acept please\n/acept is not a railyard command. Did you mean /accept?"
    )


def test_a_near_miss_beside_a_command_is_the_line_quoted() -> None:
    """The near miss is answered (the command does not run), so its line is the one quoted."""
    assert parse_comment("/clam\n/status").line == "/clam"


@pytest.mark.parametrize("text", ["a`b", "`start", "end`", "``x``", "a ``` b", "`"])
def test_a_code_span_shows_backticks_as_typed(text: str) -> None:
    """Backticks inside the line cannot close the span early or show a stray backslash."""
    assert html.unescape(_CODE.findall(render(code_span(text)))[0]) == text


def test_a_long_line_is_cut_inside_the_code_span() -> None:
    """A 1,000-character line is shown cut, with an ellipsis, and still as one code span."""
    span = code_span("/deliver " + "x" * 1000, limit=200)
    assert len(span) <= 202 and span.endswith("…`")


@pytest.mark.parametrize("message", [Help(), StatusAnswer(None), Ignored("claim", ("accept",))])
def test_informational_replies_render_without_quotes_or_mentions(message: Message) -> None:
    """Help, status and the ignored notice mention no one and open no quote."""
    rendered = render(reply_body(reply("/help", message)))
    assert live_mentions(rendered) == [] and "<blockquote>" not in rendered
    assert "&gt;" not in shown_text(rendered)


def test_help_lists_every_command_with_its_usage_and_needs() -> None:
    """`/help` shows each command word the parser knows with the parser's own usage string."""
    rendered = render(help_text())
    items = re.findall(r"<li>(.*?)</li>", rendered, re.S)
    assert len(items) == len(COMMAND_WORDS)
    for word, item in zip(COMMAND_WORDS, items, strict=True):
        assert html.unescape(_CODE.findall(item)[0]) == USAGE[word]
        assert NEEDS[word] in shown_text(item)


def test_help_says_what_deliver_needs() -> None:
    """The issue: nothing said `/deliver` needs a summary and an artifact."""
    text = shown_text(render(help_text()))
    deliver = next(line for line in text.splitlines() if line.startswith("/deliver"))
    assert "summary" in deliver and "branch=" in deliver and "commit=" in deliver and "#PR" in deliver


@settings(max_examples=200, deadline=None)
@given(
    st.text(
        alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E) | st.sampled_from("é→ \t"), max_size=80
    )
)
def test_any_typed_line_is_shown_exactly_in_its_code_span(line: str) -> None:
    """Whatever a person types, the reply's code span shows it as typed (whitespace collapsed;
    the invisible word joiner that keeps `<!` and `railyard:` from spelling a marker aside) and
    the author is the only live mention."""
    rendered = render(reply_body(reply("/accept " + line, NearMiss("acept", "accept"))))
    shown = html.unescape(_CODE.findall(rendered)[0]).replace(WORD_JOINER, "")
    assert shown == " ".join(("/accept " + line).split())
    assert live_mentions(rendered) == ["mallory"]


def test_the_reopened_notice_mentions_the_previous_claimant_and_quotes_the_reason() -> None:
    """The claimant and the one who reopened are mentioned; the reason is a quote block whose own
    `@name` and HTML are dead; it says any runner may claim again."""
    reason = "Needs a rethink; ask @olivia. <b>now</b>\n\n- item"
    rendered = render(reopened(ReopenedNotice(1, "octo/repo", 12, "cody", "rita", reason, False, "k")))
    assert live_mentions(rendered) == ["cody", "rita"]
    assert "<blockquote>" in rendered and "<ul>" not in rendered and "<b>" not in rendered
    shown = shown_text(rendered)
    assert "ask @\u2060olivia." in shown and "<b>now</b>" in shown
    assert "Any runner may claim it again" in shown and "unassigned" in shown


def test_a_claimant_who_gave_the_work_up_is_named_not_mentioned() -> None:
    """Released by the claimant: no live mention at all (they did it), the reason still quoted."""
    notice = ReopenedNotice(1, "octo/repo", 12, "cody", "cody", "Out of my depth.", True, "k")
    rendered = render(reopened(notice))
    assert live_mentions(rendered) == []
    shown = shown_text(rendered)
    assert "cody gave the work up" in shown.replace("\u2060", "") and "Out of my depth." in shown


def test_the_sent_back_notice_mentions_runner_and_reviewer_and_quotes_the_feedback() -> None:
    """Two deliberate mentions; the feedback is a quote block, its own `@name` dead."""
    notice = SentBackNotice(1, "octo/repo", 12, "cody", 2, "rita", "Tests fail; ask @olivia.\n\n- item", "k")
    rendered = render(sent_back(notice))
    assert live_mentions(rendered) == ["cody", "rita"]
    assert "<blockquote>" in rendered and "<ul>" not in rendered
    assert "Tests fail; ask @\u2060olivia." in shown_text(rendered)
