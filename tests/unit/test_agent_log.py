"""Text from GitHub or railyard written by `railyard agent` to stdout, stderr or
`$GITHUB_STEP_SUMMARY` can never start an Actions workflow command (SPEC: "Answers that cannot
be forged or jammed"): no line, at any kind of line break and after any leading whitespace,
begins with `::` or `##[`, and no line holds `##[` anywhere (the runner finds the older form
anywhere in a line)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from app.cli.agent import report
from app.cli.agent_core import Options, Result, from_api, refused_by_reply, unknown
from app.cli.agent_log import clean_line, prefixed

COMMANDS = (
    "::warning::pwned",
    "\r::error::x",
    "  ::add-mask::secret",
    "\t::stop-commands::tok",
    "\u2028::set-output name=a::b",
    "\x0b::debug::x",
    "\x85::notice::x",
    "##[error]x",
    "see ##[warning]mid-line",
    "###[group]x",
    "`##[add-mask]code`",
    "\x1b[2K::warning::erased",
    "\u200b::warning::hidden",
    "\n",
    "::",
)
TEXT = st.one_of(st.text(max_size=120), st.lists(st.sampled_from(COMMANDS), max_size=8).map("".join))
ANY_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def _starts_a_command(text: str) -> list[str]:
    """Every line of `text` that a runner (or a reader splitting at any line break) could run."""
    lines = ANY_BREAK.split(text)
    return [line for line in lines if line.strip(" \t\u00a0\x1b").startswith(("::", "##["))]


def _options(tmp: Path) -> Options:
    return Options("deliver", "acme/web", 12, "t", None, "https://api.github.com", "k", 60)


def _written(result: object, tmp: Path, as_json: bool = False) -> list[str]:
    out, err = io.StringIO(), io.StringIO()
    summary, output = tmp / "summary.md", tmp / "output"
    env = {"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(output)}
    report(_options(tmp), result, env, out, err, as_json=as_json)  # type: ignore[arg-type]
    return [out.getvalue(), err.getvalue(), summary.read_text(), output.read_text()]


def test_a_refusal_whose_words_hold_a_workflow_command_cannot_run_it(tmp_path: Path) -> None:
    """railyard's words ending in `\\n::warning::pwned` reach stderr as a `railyard:` line."""
    result = from_api(409, {"applied": False, "refusal": {"code": "x", "message": "No.\n::warning::pwned"}})
    for written in _written(result, tmp_path):
        assert _starts_a_command(written) == [], written
    assert "railyard: refused: ::warning::pwned" in _written(result, tmp_path)[1]


@settings(max_examples=150, deadline=None)
@given(message=TEXT, hint=TEXT, code=TEXT)
def test_no_text_from_an_answer_starts_a_workflow_command_anywhere(
    tmp_path_factory: object, message: str, hint: str, code: str
) -> None:
    """Whatever a refusal, a reply or GitHub's error says, no line of stdout, stderr, the step
    summary or the outputs starts a workflow command, in JSON or words."""
    tmp = Path(str(tmp_path_factory.mktemp("log")))  # type: ignore[attr-defined]
    reply = f"@cody: `/claim`\n\n{message}\n\n{hint}\n\n<!-- railyard:answer {{}} -->"
    results = [
        from_api(409, {"applied": False, "refusal": {"code": code, "message": message, "hint": hint}}),
        refused_by_reply({"code": code}, reply),
        from_api(400, {"error": {"code": code, "message": message}}),
        unknown(message),
    ]
    for result in results:
        for as_json in (False, True):
            for written in _written(result, tmp, as_json):
                assert _starts_a_command(written) == [], written


@given(text=TEXT)
def test_a_prefixed_text_has_the_prefix_on_every_line_and_nothing_invisible(text: str) -> None:
    """Each line starts with the prefix; escapes, invisible characters and odd breaks are gone."""
    written = prefixed("railyard: ", text)
    assert all(line.startswith("railyard: ") for line in written.splitlines())
    assert ANY_BREAK.sub("", written.replace("\n", "")) == written.replace("\n", "")
    assert "\x1b" not in clean_line(text) and "\u200b" not in clean_line(text)


def _runnable(text: str) -> list[str]:
    """Every line of `text` the runner would run: one starting with `::` after whitespace, or
    holding `##[` anywhere (`ActionCommand.TryParse` looks for it in the whole line)."""
    lines = ANY_BREAK.split(text)
    return [line for line in lines if "##[" in line or line.strip(" \t\u00a0\x1b").startswith("::")]


def _answers(message: str, hint: str, code: str) -> list[Result]:
    summary = f"done\n{message}"
    status = {"work": "delivered", "attempts": [{"summary": summary, "branch": message}]}
    reply = f"@cody: `{message}`\n\n{message}\n\n{hint}\n\n<!-- railyard:answer {{}} -->"
    return [
        from_api(200, {"applied": True, "status": status}),
        from_api(409, {"applied": False, "refusal": {"code": code, "message": message, "hint": hint}}),
        refused_by_reply({"code": code}, reply),
        from_api(400, {"error": {"code": code, "message": message}}),
        unknown(message),
    ]


@settings(max_examples=150, deadline=None)
@given(message=TEXT, hint=TEXT, code=TEXT)
def test_no_line_the_agent_writes_holds_the_older_command_form_anywhere(
    tmp_path_factory: object, message: str, hint: str, code: str
) -> None:
    """Whatever GitHub or another runner's summary says, no line of stdout, stderr or the step
    summary holds `##[` anywhere or starts with `::`, in words or in `--json`."""
    tmp = Path(str(tmp_path_factory.mktemp("log")))  # type: ignore[attr-defined]
    for result in _answers(message, hint, code):
        for as_json in (False, True):
            for written in _written(result, tmp, as_json):
                assert _runnable(written) == [], written


def test_the_json_answer_still_says_what_the_answer_said(tmp_path: Path) -> None:
    """`--json` spells `#` as an escape, so a summary holding `##[error]` reads back unchanged."""
    status = {"work": "delivered", "summary": "fixed ##[error]x and #12"}
    result = from_api(200, {"applied": True, "status": status})
    out = _written(result, tmp_path, as_json=True)[0]
    assert "#" not in out
    assert json.loads(out)["status"] == status


def test_a_refusal_with_the_older_form_mid_line_reaches_stderr_broken(tmp_path: Path) -> None:
    """`No. ##[error]x` is shown with a word joiner between the two `#`, which no runner parses."""
    result = from_api(409, {"applied": False, "refusal": {"code": "x", "message": "No. ##[error]x"}})
    err = _written(result, tmp_path)[1]
    assert "railyard: refused: No. #\u2060#[error]x" in err
