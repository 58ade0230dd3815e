"""The slash-command parser (SPEC: "Commands"): near misses, argument errors and the validators."""

from __future__ import annotations

import pytest

from policies.commands import Claim
from policies.parser import ParsedComment, parse_comment, valid_artifact_url, valid_branch_name
from tests.unit.parser_helpers import error_of

# --- near misses ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "typed", "suggestion"),
    [
        ("/acept", "acept", "accept"),
        ("/sendback tests fail", "sendback", "send-back"),
        ("/send_back", "send_back", "send-back"),
        ("/deliever branch=x", "deliever", "deliver"),
        ("/Reopn broken", "Reopn", "reopen"),
        ("/clam", "clam", "claim"),
        ("/stauts", "stauts", "status"),
        ("/accept.", "accept.", "accept"),
        ("/claim: now", "claim:", "claim"),
        ("/publsh --no-code", "publsh", "publish"),
    ],
)
def test_a_mistyped_command_word_gets_a_suggestion(body: str, typed: str, suggestion: str) -> None:
    """Close misspellings are reported as (typed, suggestion) and run nothing."""
    parsed = parse_comment(body)
    assert parsed.command is None
    assert parsed.word is None
    assert parsed.near_miss == (typed, suggestion)


@pytest.mark.parametrize(
    "body",
    [
        "/usr/bin/env python",
        "/etc",
        "/etc/hosts",
        "/home/me",
        "/var/log",
        "/api/v1",
        "/deploy",
        "/lgtm",
        "/x",
        "/1234",
    ],
)
def test_paths_and_unrelated_words_get_no_suggestion(body: str) -> None:
    """Only a close match is suggested: paths and other slash words are left alone."""
    assert parse_comment(body) == ParsedComment()


def test_a_near_miss_inside_code_is_not_reported() -> None:
    """Near misses are looked for where commands are: not in code."""
    assert parse_comment("```\n/acept\n```").near_miss is None


def test_the_first_near_miss_is_reported_next_to_a_real_command() -> None:
    """The app may mention the near miss while running the real command."""
    parsed = parse_comment("/acept\n/claim\n/sendback")
    assert parsed.command == Claim()
    assert parsed.near_miss == ("acept", "accept")


# --- argument errors -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("/claim --check-in abc", "--check-in takes whole minutes"),
        ("/claim --check-in", "--check-in needs a value"),
        ("/claim --check-in 0", "--check-in takes whole minutes"),
        ("/claim --check-in -5", "--check-in takes whole minutes"),
        ("/claim --check-in 1.5", "--check-in takes whole minutes"),
        ("/claim --check-in 30 --check-in 40", "once"),
        ("/claim --force", "does not know '--force'"),
        ("/claim branch=", "branch= takes a git branch name"),
        ("/claim branch=a..b", "branch= takes a git branch name"),
        ("/claim branch=x branch=y", "/claim takes branch= once"),
        ("/claim soon", "takes no text"),
        ("/claim pr=3", "does not know 'pr='"),
        ("/deliver commit=xyz done", "commit= takes a hex commit sha"),
        ("/deliver commit=abc123 done", "commit= takes a hex commit sha"),
        ("/deliver commit=" + "a" * 41, "commit= takes a hex commit sha"),
        ("/deliver artifact=ftp://example.com/x", "artifact= takes an http or https URL"),
        ("/deliver artifact=https:///nohost", "artifact= takes an http or https URL"),
        ("/deliver artifact=http://[::1 x", "artifact= takes an http or https URL"),
        ("/deliver sha=abcdef0 done", "does not know 'sha='"),
        ("/deliver --force done", "does not know '--force'"),
        ("/deliver #1 #2 done", "names one pull request"),
        ("/publish --no-code=yes", "--no-code takes no value"),
        ("/publish --nocode", "Did you mean --no-code?"),
        ("/accept --self --override reason", "not both"),
        ("/accept --overide reason", "Did you mean --override?"),
        ("/accept #0", "is not a ticket number"),
        ("/accept #1234567890", "is not a ticket number"),
        ("/draft now", "takes no text"),
        ("/reopen --hard", "does not know '--hard'"),
    ],
)
def test_argument_errors_say_what_is_wrong_and_build_no_command(body: str, fragment: str) -> None:
    """A wrong argument gives a short, actionable message and no command value."""
    assert fragment in error_of(body)


def test_errors_show_long_values_cut_short() -> None:
    """A huge bad value is not echoed back in full."""
    message = error_of("/deliver commit=" + "z" * 10_000)
    assert len(message) < 200


def test_error_messages_show_the_usage() -> None:
    """An unknown flag's message shows how to write the command."""
    assert "/claim [--check-in MINUTES] [branch=NAME]" in error_of("/claim --now")


# --- validators ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["main", "agent/12-fix", "feature/ü-unicode", "v1.2", "a_b", "HEAD-ish"])
def test_ordinary_branch_names_are_valid(name: str) -> None:
    """Names git accepts are accepted."""
    assert valid_branch_name(name)


@pytest.mark.parametrize(
    "name",
    [
        *("", "-x", "/x", "x/", "x.", "a..b", "a//b", "a@{b", "@", "a b", "a~b", "a^b", "a:b", "a?b"),
        *("a*b", "a[b", "a\\b", "a\x00b", ".hidden", "a/.b", "x.lock", "a/b.lock/c", "x" * 256),
    ],
)
def test_branch_names_git_refuses_are_invalid(name: str) -> None:
    """Names `git check-ref-format --branch` refuses are refused."""
    assert not valid_branch_name(name)


@pytest.mark.parametrize(
    "url", ["https://example.com", "http://ci.example/run/1?x=y#z", "HTTPS://EXAMPLE.COM/A"]
)
def test_http_and_https_urls_are_valid_artifacts(url: str) -> None:
    """Absolute web URLs with a host are artifacts."""
    assert valid_artifact_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "ftp://x",
        "javascript:alert(1)",
        "file:///etc/passwd",
        "https://",
        "example.com",
        "http://[::1",
        "http://a\x00",
    ],
)
def test_other_urls_are_not_artifacts(url: str) -> None:
    """Other schemes, hostless or malformed URLs are refused."""
    assert not valid_artifact_url(url)
