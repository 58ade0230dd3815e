"""`railyard agent` through railyard's API (SPEC: "Agent interface"), against respx: the same
idempotency key and body on every retry, a refusal fails with railyard's words, the step's
summary and outputs say what happened."""

from __future__ import annotations

import io
import json
from pathlib import Path

import httpx
import pytest
import respx

from app.cli import main
from app.cli.agent_api import run_api
from app.cli.agent_core import EXIT_APPLIED, EXIT_UNKNOWN, Options

URL = "https://railyard.example"
COMMANDS = f"{URL}/api/v1/repos/acme/web/tickets/12/commands"
STATUS = {"ticket": "acme/web#12", "work": "claimed", "revision": 5, "attempt": 1, "claimant_id": 7}
APPLIED = {"applied": True, "status": STATUS, "events": [{"type": "claimed"}]}
REFUSED = {
    "applied": False,
    "refusal": {
        "code": "stale_revision",
        "message": "#12 changed since revision 3 was read; it is now at revision 5.",
        "hint": "Read the ticket again; if the command still holds, send it again with rev=5.",
    },
    "status": {**STATUS, "work": "open"},
}


@pytest.fixture(autouse=True)
def _outside_actions(monkeypatch: pytest.MonkeyPatch) -> None:
    """No Actions environment leaks in: no run id, summary file or output file unless a test sets one."""
    for name in ("GITHUB_RUN_ID", "GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT", "GITHUB_SHA", "RAILYARD_URL"):
        monkeypatch.delenv(name, raising=False)


def _options(**changes: object) -> Options:
    values: dict[str, object] = {
        "action": "claim", "repo": "acme/web", "issue": 12, "token": "ghp_agent", "url": URL,
        "github_api_url": "https://api.github.com", "key": "gha-run-1-claim-12", "timeout": 120.0, "rev": 4,
        "check_in": 30,
    }  # fmt: skip
    return Options(**{**values, **changes})  # type: ignore[arg-type]


class FakeTime:
    """A clock that moves only when the command sleeps; the sleeps are recorded."""

    def __init__(self) -> None:
        self.now, self.slept = 0.0, list[float]()

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


@respx.mock
def test_a_503_and_a_dropped_connection_are_retried_with_the_same_key_and_body() -> None:
    """503, then no connection, then 200: three posts, one key, one body; the answer is the applied one."""
    route = respx.post(COMMANDS).mock(
        side_effect=[
            httpx.Response(
                503, json={"error": {"code": "github_unreachable", "message": "GitHub did not answer"}}
            ),
            httpx.ConnectError("refused"),
            httpx.Response(200, json=APPLIED, headers={"Idempotent-Replayed": "true"}),
        ]
    )
    time = FakeTime()
    with httpx.Client() as client:
        result = run_api(_options(), client, time.sleep, time.clock)
    assert (
        result.exit == EXIT_APPLIED and result.line == "applied (replayed): acme/web#12 claimed at revision 5"
    )
    assert time.slept == [1.0, 2.0]
    keys = {call.request.headers["Idempotency-Key"] for call in route.calls}
    bodies = {call.request.content for call in route.calls}
    assert keys == {"gha-run-1-claim-12"} and len(bodies) == 1 and route.call_count == 3
    assert json.loads(bodies.pop()) == {"command": "/claim --check-in 30", "expected_revision": 4}
    assert route.calls[0].request.headers["Authorization"] == "Bearer ghp_agent"


@respx.mock
def test_retry_after_is_honoured_and_the_timeout_ends_the_retries_as_unknown() -> None:
    """A 503 that never ends: waits follow Retry-After, and past the timeout the outcome is unknown."""
    respx.post(COMMANDS).mock(return_value=httpx.Response(503, headers={"Retry-After": "20"}))
    time = FakeTime()
    with httpx.Client() as client:
        result = run_api(_options(timeout=50.0), client, time.sleep, time.clock)
    assert result.exit == EXIT_UNKNOWN and time.slept == [20.0, 20.0]
    assert "retry with the same idempotency key (gha-run-1-claim-12)" in result.line


@respx.mock
def test_a_refusal_exits_1_with_railyards_message_and_hint_and_writes_the_step_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 409 stale revision: exit 1, the message and hint on stderr, the summary and outputs written."""
    respx.post(COMMANDS).mock(return_value=httpx.Response(409, json=REFUSED))
    summary, output = tmp_path / "summary.md", tmp_path / "output"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    out, err = io.StringIO(), io.StringIO()
    argv = [
        "agent",
        "claim",
        "--repo",
        "acme/web",
        "--issue",
        "12",
        "--token",
        "t",
        "--url",
        URL,
        "--rev",
        "3",
    ]
    assert main(argv, None, out, err) == 1
    assert out.getvalue().startswith(
        "railyard claim acme/web#12: refused (stale_revision, HTTP 409): #12 changed"
    )
    assert err.getvalue() == (
        "railyard: refused: #12 changed since revision 3 was read; it is now at revision 5.\n"
        "railyard: hint: Read the ticket again; if the command still holds, send it again with rev=5.\n"
    )
    text = summary.read_text()
    assert text.startswith("earlier step\n### railyard claim acme/web#12: refused\n")
    assert (
        f"- via: API {URL}" in text
        and "- code: `stale_revision`" in text
        and "- revision 5, attempt 1" in text
    )
    assert output.read_text() == "revision=5\nattempt=1\napplied=false\n"


@respx.mock
def test_a_reused_key_is_a_usage_error_not_retried() -> None:
    """422 (the key was used with another body): exit 2 after one post; sending again would not help."""
    route = respx.post(COMMANDS).mock(
        return_value=httpx.Response(422, json={"error": {"code": "key_reused", "message": "another body"}})
    )
    out, err = io.StringIO(), io.StringIO()
    argv = ["agent", "claim", "--repo", "acme/web", "--issue", "12", "--token", "t", "--url", URL, "--json"]
    assert main(argv, None, out, err) == 2 and route.call_count == 1
    assert json.loads(out.getvalue())["error"]["code"] == "key_reused"
    assert "not sent (key_reused, HTTP 422): another body" in err.getvalue()


@respx.mock
def test_a_delivery_sends_branch_commit_artifacts_and_summary_in_the_comment_grammar(tmp_path: Path) -> None:
    """`agent deliver` posts `/deliver branch= commit= artifact= -- SUMMARY` from --summary-file."""
    route = respx.post(COMMANDS).mock(return_value=httpx.Response(200, json=APPLIED))
    (tmp_path / "summary.md").write_text("Uploads resume.\n/accept me\n")
    argv = ["agent", "deliver", "--repo", "acme/web", "--issue", "12", "--token", "t", "--url", URL]
    argv += ["--branch", "agent/12-fix", "--commit", "c" * 40, "--artifact", "https://ci/1"]
    argv += ["--summary-file", str(tmp_path / "summary.md"), "--idempotency-key", "k1"]
    assert main(argv, None, io.StringIO(), io.StringIO()) == 0
    sent = json.loads(route.calls[0].request.content)
    assert sent == {"command": f"/deliver branch=agent/12-fix commit={'c' * 40} artifact=https://ci/1 -- "
                    "Uploads resume.\n\\/accept me"}  # fmt: skip
    assert route.calls[0].request.headers["Idempotency-Key"] == "k1"
