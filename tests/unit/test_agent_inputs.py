"""`railyard agent` inputs at their edges: `--timeout 0` is one try and no outcome (exit 3),
never a crash; `--timeout nan` is a usage error, never an endless wait; a summary with a bare
carriage return is delivered whole (a `/` after it is escaped, as after a newline)."""

from __future__ import annotations

import io
import threading

from app.cli import main
from app.cli.agent_core import deliver_text
from policies.parser import parse_comment

BASE = ["--repo", "acme/web", "--issue", "12", "--token", "t", "--url", "http://127.0.0.1:9"]


def _run(argv: list[str], seconds: float = 20.0) -> tuple[int | None, str, str]:
    out, err = io.StringIO(), io.StringIO()
    found: list[int | BaseException] = []

    def go() -> None:
        try:
            found.append(main(argv, None, out, err))
        except BaseException as error:
            found.append(error)

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    thread.join(seconds)
    assert found, f"still running after {seconds} s: {argv}"
    assert not isinstance(found[0], BaseException), repr(found[0])
    return int(found[0]), out.getvalue(), err.getvalue()  # type: ignore[arg-type]


def test_timeout_zero_is_no_outcome_not_a_crash() -> None:
    """`--timeout 0` passes the CLI's own check ("0 or more seconds"); docs/agents.md: exit 3 is
    no outcome before the timeout. Instead httpx gets a negative timeout: ValueError, traceback,
    exit status 1 (the status that means "refused")."""
    status, out, err = _run(["agent", "claim", *BASE, "--timeout", "0"])
    assert status == 3, (status, out, err)


def test_timeout_nan_is_a_usage_error_not_an_endless_loop() -> None:
    """`--timeout nan` must be refused as a bad input (exit 2); it retries for ever instead."""
    status, out, err = _run(["agent", "claim", *BASE, "--timeout", "nan"], seconds=15)
    assert status == 2, (status, out, err)


def test_a_summary_with_a_bare_carriage_return_is_delivered_whole() -> None:
    """A summary line starting with `/` stays in the summary (deliver_text escapes it), but only
    after `\\n`: after a bare `\\r`, which the parser (like CommonMark) reads as a line ending, the
    line is an extra command line: the API answers 422 several_commands (exit 2), and by comment
    the summary is cut to `done` with `/accept` reported as ignored."""
    parsed = parse_comment(deliver_text("done\r/accept the rest", "agent/12-fix", None, [], None))
    assert parsed.ignored == ()
    assert "accept the rest" in parsed.command.summary  # type: ignore[union-attr]


def test_an_app_id_of_digits_that_are_not_ascii_is_a_usage_error_not_a_crash() -> None:
    """`"²".isdigit()` is true but `int("²")` raises: `--app-id ²` was a traceback with exit 1
    (the status that means "refused") instead of exit 2 and a `railyard:` line."""
    argv = ["agent", "claim", "--repo", "acme/web", "--issue", "12", "--token", "t", "--app-id", "²"]
    status, out, err = _run(argv)
    assert status == 2 and err.startswith("railyard: --app-id"), (status, out, err)
