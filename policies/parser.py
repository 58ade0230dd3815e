"""The slash-command parser: a comment's text in, at most one command out (SPEC: "Commands").

A command is a line that begins with `/` and a command word (any case) where GitHub renders
that slash as plain text at the start of a line. SPEC says "a comment line that begins with
`/` and a command word, at the start of the line, outside fenced or indented code,
blockquotes and HTML comments": any line, not only a paragraph's first, so the rule
implemented is SPEC's, made exact with CommonMark (`policies.markdown_blocks`, checked against
markdown-it-py in tests/unit/test_parser_oracle.py):

- the line is part of a paragraph, at the top level or in a list item, never in a block
  quote (lazy continuations included: `- > quoted` then `/accept` is quoted), fenced or
  indented code, an HTML block or a heading;
- its first character is plain text, not inside a code span, tag or HTML comment begun on an
  earlier line ("text `start", "/accept", "end` text" is one code span);
- the raw line holds only whitespace before the slash: `Thanks!` then `/accept` on the next
  line runs (it is a continuation line GitHub shows at the start of a line), `- /accept`
  does not (the line begins with a list marker), and neither does `    /accept` after a
  blank line (indented code), while `para` then `    /accept` does (a continuation).

`parse_comment` never raises: whatever the text, it answers with a `ParsedComment` saying what
was found, what was ignored and what was wrong.

Arguments are the leading tokens of the command line: `#N`, `--flag` (an en or em dash that
a phone put in place of `--` counts), `--flag VALUE` or `--flag=VALUE`, `key=value`; flag and
key names ignore case. The first other token starts the free text, which runs on over every
following line of the comment as a reader sees it (HTML comments and other command lines
left out, code kept as written); `--` ends the arguments early. `/deliver` takes the text as
its summary and `#N` as its linked PR; `/send-back` as feedback; `/reopen` and `/accept` (any
mode) as the reason; the text is kept without the characters people cannot see
(`policies.text`), and a branch name holding one is refused. `/draft`, `/publish` and
`/claim` take no text: an extra word is an error, as is an unknown flag or key, so a typo
never runs a different command. Missing required text (summary, feedback, reason) is left to
the engine, which refuses it knowing the ticket's state.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from policies.commands import (
    MAX_CHECK_IN_MINUTES,
    Accept,
    AcceptMode,
    Claim,
    Command,
    CommandName,
    Deliver,
    Draft,
    Publish,
    Reopen,
    SendBack,
)
from policies.evidence import EVIDENCE_KEYS, evidence_from, evidence_problem
from policies.markdown_blocks import LineKind, ScannedLine, scan_markdown
from policies.text import drop_invisible, has_invisible

INFORMATIONAL: tuple[str, ...] = ("status", "help")
COMMAND_WORDS: tuple[str, ...] = (*(name.value for name in CommandName), *INFORMATIONAL)
NEAR_MISS_CUTOFF = 0.75  # `/hepl` (0.75) and `/acept` are close; `/etc` and `/home` are not


@dataclass(frozen=True)
class ParsedComment:
    """What a comment asks for.

    `command` is the state-changing command, built from its arguments (None when the comment
    has none, only an informational one, or `error` says what is wrong with its arguments).
    `word` is THE command's word ("accept", "status"...); `informational` is "status" or
    "help" when that is all the comment asks. `target` is the ticket a `#N` argument names.
    `ignored` lists the words of every further command line. `near_miss` is (typed,
    suggestion) for the first line that looks like a mistyped command, words without the
    slash. `line` is the line the comment's answer quotes, as written: THE command's line,
    or the near miss's when there is one and the arguments are fine (a near miss is answered
    before the command runs, so `/acept` is quoted whole, not as `/`). `expected_revision` is
    the `rev=N` of a state-changing command: it binds the execution (the one door), not what
    the command means, so it travels beside the command rather than inside every kind of it.
    """

    command: Command | None = None
    word: str | None = None
    informational: str | None = None
    target: int | None = None
    ignored: tuple[str, ...] = ()
    near_miss: tuple[str, str] | None = None
    error: str | None = None
    line: str | None = None
    expected_revision: int | None = None


@dataclass(frozen=True)
class _Grammar:
    usage: str
    needs: str  # what the command requires, in a sentence for `/help`
    flags: frozenset[str] = frozenset()  # flags without a value
    valued_flags: frozenset[str] = frozenset()  # flags taking the next token (or `=value`)
    keys: frozenset[str] = frozenset()  # `key=value` arguments
    takes_text: bool = False  # free text follows the arguments


_GRAMMARS: dict[CommandName, _Grammar] = {
    CommandName.DRAFT: _Grammar("/draft [rev=N] [#N]", "nothing: makes the issue a draft ticket"),
    CommandName.PUBLISH: _Grammar(
        "/publish [--no-code] [rev=N] [#N]",
        "a description (the issue body) and an owner; --no-code for work without code, whose "
        "deliveries then need artifact=URL",
        flags=frozenset({"no-code"}),
    ),
    CommandName.CLAIM: _Grammar(
        "/claim [--check-in MINUTES] [branch=NAME] [rev=N] [#N]",
        "an open ticket; --check-in sets how long silence may last, branch= the branch the attempt works on",
        valued_flags=frozenset({"check-in"}),
        keys=frozenset({"branch"}),
    ),
    CommandName.DELIVER: _Grammar(
        "/deliver [branch=NAME] [commit=SHA] [artifact=URL ...] [model=NAME] [tokens_in=N] "
        "[tokens_out=N] [cost=USD] [rev=N] [#PR] SUMMARY",
        "a summary (the text after the arguments and on the next lines) and at least one "
        "artifact: branch=, commit=, artifact= or a linked pull request #PR; model=, tokens_in=, "
        "tokens_out= and cost= report what the run used (as the runner says)",
        keys=frozenset({"branch", "commit", "artifact", *EVIDENCE_KEYS}),
        takes_text=True,
    ),
    CommandName.ACCEPT: _Grammar(
        "/accept [--self | --override REASON] [rev=N] [#N]",
        "a delivery reviewed by someone other than its runner; --self only for the delivering "
        "runner where the config allows it; --override REASON waives the independence rules",
        flags=frozenset({"self", "override"}),
        takes_text=True,
    ),
    CommandName.SEND_BACK: _Grammar(
        "/send-back [rev=N] [#N] FEEDBACK",
        "feedback for the runner (the text after the command)",
        takes_text=True,
    ),
    CommandName.REOPEN: _Grammar(
        "/reopen [rev=N] [#N] REASON", "a reason (the text after the command)", takes_text=True
    ),
}

USAGE: dict[str, str] = {
    **{name.value: grammar.usage for name, grammar in _GRAMMARS.items()},
    "status": "/status [#N]",
    "help": "/help",
}
NEEDS: dict[str, str] = {
    **{name.value: grammar.needs for name, grammar in _GRAMMARS.items()},
    "status": "nothing: replies with where the ticket stands and who can act next",
    "help": "nothing: this list",
}

_SLASH_TOKEN = re.compile(r"/(\S*)")
_TOKEN = re.compile(r"\s*(\S+)")
_NUMBER = re.compile(r"#([0-9]+)", re.ASCII)
_FLAG = re.compile(r"(?:--|\u2014|\u2013)([A-Za-z][A-Za-z0-9-]*)(?:=(.*))?", re.ASCII | re.DOTALL)
_KEY_VALUE = re.compile(r"([A-Za-z][A-Za-z0-9_-]*)=(.*)", re.ASCII | re.DOTALL)
_MINUTES = re.compile(r"[0-9]{1,6}", re.ASCII)
_REVISION = re.compile(r"[0-9]{1,9}", re.ASCII)
_COMMIT = re.compile(r"[0-9a-fA-F]{7,40}", re.ASCII)
_NEAR_MISS_SHAPE = re.compile(r"[A-Za-z][A-Za-z_-]{1,29}", re.ASCII)
_BRANCH_FORBIDDEN = frozenset(" ~^:?*[\\")
_MAX_BRANCH = 255
_MAX_URL = 2048
_MAX_NUMBER_DIGITS = 9


@dataclass(frozen=True)
class _CommandLine:
    index: int
    word: str
    rest: str  # the visible text after the command word
    written: str


@dataclass
class _Arguments:
    number: int | None = None
    revision: int | None = None
    flags: set[str] = field(default_factory=set)
    values: dict[str, list[str]] = field(default_factory=dict)
    text: str = ""


def parse_comment(body: str) -> ParsedComment:
    """The command a new comment runs, what it ignores and what is wrong; never raises."""
    lines = scan_markdown(body)
    found: list[_CommandLine] = []
    near_miss: tuple[str, str] | None = None
    near_line: str | None = None
    for line in lines:
        slash = _slash_token(line)
        if slash is None:
            continue
        token, rest = slash
        if token.isascii() and token.lower() in COMMAND_WORDS:
            found.append(_CommandLine(line.index, token.lower(), rest, line.raw.strip()))
        elif near_miss is None:
            near_miss = _near_miss(token)
            near_line = line.raw.strip() if near_miss is not None else None
    chosen = _choose(found)
    if chosen is None:
        return ParsedComment(near_miss=near_miss, line=near_line)
    ignored = tuple(other.word for other in found if other is not chosen)
    if chosen.word in INFORMATIONAL:
        return ParsedComment(
            word=chosen.word,
            informational=chosen.word,
            target=_leading_number(chosen.rest),
            ignored=ignored,
            near_miss=near_miss,
            line=near_line or chosen.written,
        )
    following = _following_text(lines, chosen, {other.index for other in found})
    built = _build(CommandName(chosen.word), chosen.rest, following)
    if isinstance(built, str):
        return ParsedComment(
            word=chosen.word, ignored=ignored, near_miss=near_miss, error=built, line=chosen.written
        )
    command, target, revision = built
    return ParsedComment(
        command=command,
        word=chosen.word,
        target=target,
        expected_revision=revision,
        ignored=ignored,
        near_miss=near_miss,
        line=near_line or chosen.written,
    )


def _slash_token(line: ScannedLine) -> tuple[str, str] | None:
    """The word after the slash and the rest, for a prose line that begins with `/`."""
    if line.kind is not LineKind.PROSE or not line.opens_line:
        return None
    if line.raw[: line.start].strip(" \t") or line.raw[line.start : line.start + 1] != "/":
        return None  # a list marker before the slash: the line does not begin with it
    match = _SLASH_TOKEN.match(line.text, line.start)
    if match is None or not match.group(1):
        return None
    return match.group(1), line.text[match.end() :]


def _near_miss(token: str) -> tuple[str, str] | None:
    """(typed, suggestion) when `token` is a command word mistyped; None for paths and prose."""
    bare = token.rstrip(".,:;!?")
    if _NEAR_MISS_SHAPE.fullmatch(bare) is None:
        return None
    lowered = bare.lower()
    if lowered in COMMAND_WORDS:  # `/accept.` or `/claim:`
        return token, lowered
    close = difflib.get_close_matches(lowered, COMMAND_WORDS, n=1, cutoff=NEAR_MISS_CUTOFF)
    return (token, close[0]) if close else None


def _choose(found: list[_CommandLine]) -> _CommandLine | None:
    """The first state-changing command line, else the first informational one."""
    for candidate in found:
        if candidate.word not in INFORMATIONAL:
            return candidate
    return found[0] if found else None


def _leading_number(rest: str) -> int | None:
    match = _TOKEN.match(rest)
    number = _NUMBER.fullmatch(match.group(1)) if match is not None else None
    if number is None or len(number.group(1)) > _MAX_NUMBER_DIGITS:
        return None
    return int(number.group(1)) or None


def _following_text(lines: tuple[ScannedLine, ...], chosen: _CommandLine, commands: set[int]) -> str:
    """What follows THE command's line as a reader sees it; other command lines left out."""
    return "\n".join(
        line.text
        for line in lines[chosen.index + 1 :]
        if line.index not in commands
        and line.kind is not LineKind.HIDDEN
        and (line.text.strip() or not line.raw.strip())  # a line that was all comment goes
    )


def _build(name: CommandName, rest: str, following: str) -> tuple[Command, int | None, int | None] | str:
    """The command value, its `#N` target and its `rev=N`, or a message saying what is wrong."""
    arguments = _arguments(name, _GRAMMARS[name], rest)
    if isinstance(arguments, str):
        return arguments
    built = _command(name, arguments, following)
    return built if isinstance(built, str) else (*built, arguments.revision)


def _command(name: CommandName, arguments: _Arguments, following: str) -> tuple[Command, int | None] | str:
    """The command value and its `#N` target from its arguments and text."""
    grammar = _GRAMMARS[name]
    # Kept as people see it: the status object and the API must not carry invisible text.
    text = drop_invisible("\n".join((arguments.text, following))).strip()
    values = arguments.values
    match name:
        case CommandName.DRAFT:
            return Draft(), arguments.number
        case CommandName.PUBLISH:
            return Publish(no_code="no-code" in arguments.flags), arguments.number
        case CommandName.CLAIM:
            minutes = values.get("check-in", [None])[0]
            branch = values.get("branch", [None])[0]
            return Claim(check_in_minutes=int(minutes) if minutes else None, branch=branch), arguments.number
        case CommandName.DELIVER:
            commit = values.get("commit", [None])[0]
            deliver = Deliver(
                summary=text,
                branch=values.get("branch", [None])[0],
                commit=commit.lower() if commit else None,
                pull_request=arguments.number,
                artifacts=tuple(values.get("artifact", [])),
                evidence=evidence_from(
                    model=values.get("model", [None])[0],
                    input_tokens=values.get("tokens_in", [None])[0],
                    output_tokens=values.get("tokens_out", [None])[0],
                    cost=values.get("cost", [None])[0],
                ),
            )
            return deliver, None
        case CommandName.ACCEPT:
            accept = _accept(arguments.flags, text, grammar)
            return accept if isinstance(accept, str) else (accept, arguments.number)
        case CommandName.SEND_BACK:
            return SendBack(feedback=text), arguments.number
        case CommandName.REOPEN:
            return Reopen(reason=text), arguments.number


def _accept(flags: set[str], text: str, grammar: _Grammar) -> Accept | str:
    if {"self", "override"} <= flags:
        return f"/accept takes --self or --override, not both. Use: {grammar.usage}"
    if "override" in flags:
        return Accept(mode=AcceptMode.OVERRIDE, reason=text)
    if "self" in flags:
        return Accept(mode=AcceptMode.SELF, reason=text)
    return Accept(reason=text)


def _arguments(name: CommandName, grammar: _Grammar, rest: str) -> _Arguments | str:
    """The leading arguments of a command line; the text after them; or what is wrong."""
    arguments = _Arguments()
    position = 0
    while (match := _TOKEN.match(rest, position)) is not None:
        piece, position = match.group(1), match.end()
        if piece == "--":  # everything after is text, even `--flag` or `#12`
            arguments.text = rest[position:]
            break
        if (number := _NUMBER.fullmatch(piece)) is not None:
            problem = _take_number(arguments, number.group(1), name)
        elif (flag := _FLAG.fullmatch(piece)) is not None:
            problem, position = _take_flag(arguments, grammar, name, flag, rest, position)
        elif (pair := _KEY_VALUE.fullmatch(piece)) is not None and pair.group(1).lower() == "rev":
            problem = _take_revision(arguments, name, pair.group(2))
        elif (pair := _KEY_VALUE.fullmatch(piece)) is not None and (grammar.keys or not grammar.takes_text):
            # On /claim and /deliver `pr=12` is a typo worth reporting; on /send-back it is text.
            key = pair.group(1).lower()
            if key not in grammar.keys:
                known = [f"{known}=" for known in sorted(grammar.keys)]
                return _unknown(f"{key}=", name, grammar, known)
            problem = _take_value(arguments, name, key, pair.group(2))
        elif grammar.takes_text:
            arguments.text = rest[match.start(1) :]
            break
        else:
            problem = (
                f"/{name} takes no text after its arguments ({_shown(piece)}); "
                f"write remarks on the next line. Use: {grammar.usage}"
            )
        if problem is not None:
            return problem
    return arguments


def _take_revision(arguments: _Arguments, name: CommandName, value: str) -> str | None:
    """Record `rev=N`, the revision the command expects the ticket to be at."""
    if _REVISION.fullmatch(value) is None:
        return (
            f"rev= takes the ticket's revision, a whole number like rev=7 (the status comment "
            f"shows it); got {_shown(value)}."
        )
    if arguments.revision is not None:
        return f"/{name} takes rev= once."
    arguments.revision = int(value)
    return None


def _take_number(arguments: _Arguments, digits: str, name: CommandName) -> str | None:
    what = "pull request" if name is CommandName.DELIVER else "ticket"
    if len(digits) > _MAX_NUMBER_DIGITS or int(digits) == 0:
        return f"{_shown('#' + digits)} is not a {what} number."
    if arguments.number is not None:
        return f"/{name} names one {what}; #{arguments.number} and #{int(digits)} were given."
    arguments.number = int(digits)
    return None


def _take_flag(
    arguments: _Arguments, grammar: _Grammar, name: CommandName, flag: re.Match[str], rest: str, position: int
) -> tuple[str | None, int]:
    """Record one `--flag` (reading its value from the next token if it takes one)."""
    flag_name, value = flag.group(1).lower(), flag.group(2)
    if flag_name in grammar.flags:
        if value is not None:
            return f"--{flag_name} takes no value. Use: {grammar.usage}", position
        arguments.flags.add(flag_name)
        return None, position
    if flag_name not in grammar.valued_flags:
        known = [f"--{known}" for known in sorted(grammar.flags | grammar.valued_flags)]
        return _unknown(f"--{flag_name}", name, grammar, known), position
    if value is None:
        following = _TOKEN.match(rest, position)
        if following is None:
            return f"--{flag_name} needs a value. Use: {grammar.usage}", position
        value, position = following.group(1), following.end()
    return _take_value(arguments, name, flag_name, value), position


def _unknown(typed: str, name: CommandName, grammar: _Grammar, known: list[str]) -> str:
    close = difflib.get_close_matches(typed.lower()[:40], known, n=1, cutoff=0.6)
    hint = f" Did you mean {close[0]}?" if close else ""
    return f"/{name} does not know {_shown(typed)}.{hint} Use: {grammar.usage}"


def _take_value(arguments: _Arguments, name: CommandName, key: str, value: str) -> str | None:
    """Validate and record `key=value` (or a valued flag's value)."""
    problem = _invalid_value(key, value)
    if problem is not None:
        return problem
    existing = arguments.values.setdefault(key, [])
    if existing and key != "artifact":
        return f"/{name} takes {_spelled(key)} once."
    if value not in existing:  # an artifact named twice is one artifact
        existing.append(value)
    return None


def _spelled(key: str) -> str:
    return f"--{key}" if key == "check-in" else f"{key}="


def _invalid_value(key: str, value: str) -> str | None:
    if key == "check-in":
        if _MINUTES.fullmatch(value) is None or not 1 <= int(value) <= MAX_CHECK_IN_MINUTES:
            return (
                f"--check-in takes whole minutes from 1 to {MAX_CHECK_IN_MINUTES}, "
                f"like --check-in 90; got {_shown(value)}."
            )
    elif key == "branch":
        if not valid_branch_name(value):
            return f"branch= takes a git branch name, like branch=agent/12-fix; got {_shown(value)}."
    elif key == "commit":
        if _COMMIT.fullmatch(value) is None:
            return f"commit= takes a hex commit sha of 7 to 40 characters; got {_shown(value)}."
    elif key in EVIDENCE_KEYS:
        return evidence_problem(key, value)
    elif key == "artifact" and not valid_artifact_url(value):
        return (
            f"artifact= takes an http or https URL, like artifact=https://example.com/r; got {_shown(value)}."
        )
    return None


def _shown(value: str) -> str:
    """A user's token, quoted and cut short, for an error message."""
    return repr(value if len(value) <= 40 else value[:40] + "…")


def valid_branch_name(name: str) -> bool:
    """Whether `name` is a branch name git would accept (`git check-ref-format --branch`, roughly)."""
    if not name or len(name) > _MAX_BRANCH or name == "@":
        return False
    if name.startswith(("-", "/")) or name.endswith(("/", ".")):
        return False
    if ".." in name or "//" in name or "@{" in name:
        return False
    if any(char in _BRANCH_FORBIDDEN or ord(char) < 32 or ord(char) == 127 for char in name):
        return False
    if has_invisible(name):  # a name people cannot read as it is stored
        return False
    return not any(part.startswith(".") or part.endswith(".lock") for part in name.split("/"))


def valid_artifact_url(url: str) -> bool:
    """Whether `url` is an absolute http(s) URL with a host, printable, of sane length, and with no
    character people cannot see (programs read it as typed: the status object, the API)."""
    if len(url) > _MAX_URL or not url.isprintable() or has_invisible(url):
        return False
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unbalanced IPv6 bracket
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
