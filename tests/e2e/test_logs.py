"""Logs as an operator reads them: `railyard serve` with stderr a pipe writes JSON lines only, its
libraries' lines included; LOG_LEVEL filters; the access log is opt-in and never shows a query."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
from yarl import URL

from tests.fakes import ServerProcess

SETUP_MODE = {"APP_ID": "", "PRIVATE_KEY": "", "PRIVATE_KEY_PATH": "", "WEBHOOK_SECRET": "", "LOG_LEVEL": ""}


async def serve_log(tmp_path: Path, paths: tuple[str, ...] = (), **env: str) -> list[dict[str, Any]]:
    """Start `railyard serve` (setup mode) with `env`, GET each of `paths`, stop it; its log lines as
    JSON (a line that is not JSON fails the test)."""
    server = ServerProcess({**SETUP_MODE, "DATABASE_URL": f"sqlite:///{tmp_path}/logs.db", **env}, tmp_path)
    await server.start()
    try:
        async with aiohttp.ClientSession() as client:
            for path in paths:
                async with client.get(server.url + path) as response:
                    await response.read()
    finally:
        server.stop()
    assert server.log is not None
    lines = [line for line in server.log.read_text().splitlines() if line.strip()]
    return [json.loads(line) for line in lines]


async def test_serve_writes_only_json_lines_with_the_access_log_of_aiohttp(tmp_path: Path) -> None:
    """ACCESS_LOG=1: each request is a JSON line from aiohttp's access logger, its path, never its query."""
    records = await serve_log(tmp_path, ("/healthz?token=sekrit-value",), ACCESS_LOG="1")
    access = [r for r in records if r.get("logger") == "aiohttp.access"]
    # The harness polls /healthz until the server answers: one line per request, all alike.
    assert access and {(r["method"], r["path"], r["status"]) for r in access} == {("GET", "/healthz", 200)}
    assert any(r["event"] == "railyard started" for r in records)
    assert "sekrit-value" not in json.dumps(records)


async def test_the_access_log_is_off_by_default(tmp_path: Path) -> None:
    """Without ACCESS_LOG no request is logged."""
    records = await serve_log(tmp_path, ("/healthz",))
    assert not [r for r in records if r.get("logger") == "aiohttp.access"]


async def test_debug_shows_the_libraries_lines_as_json(tmp_path: Path) -> None:
    """LOG_LEVEL=debug lets alembic's migration lines through, rendered as JSON like railyard's own."""
    records = await serve_log(tmp_path, LOG_LEVEL="debug")
    assert any(str(r.get("logger", "")).startswith("alembic") for r in records)


async def test_log_level_warning_hides_info_lines(tmp_path: Path) -> None:
    """LOG_LEVEL=warning: no info line ("railyard started"), the setup-mode warning still shown."""
    records = await serve_log(tmp_path, LOG_LEVEL="warning")
    assert {r["level"] for r in records} == {"warning"}
    assert any("setup mode" in r["event"] for r in records)


EMIT = (
    "import logging, structlog; from app.logs import configure_logging; configure_logging('info'); "
    "logging.getLogger('aiohttp.server').warning('from aiohttp'); "
    "logging.getLogger('httpx').warning('from httpx'); structlog.get_logger('app').warning('from railyard')"
)


def test_stdlib_and_structlog_lines_share_one_json_format_on_a_pipe() -> None:
    """aiohttp's, httpx's and railyard's own lines are the same JSON on a pipe."""
    result = subprocess.run([sys.executable, "-c", EMIT], capture_output=True, text=True, check=True)
    records = [json.loads(line) for line in result.stderr.splitlines()]
    assert [(r["logger"], r["event"]) for r in records] == [
        ("aiohttp.server", "from aiohttp"),
        ("httpx", "from httpx"),
        ("app", "from railyard"),
    ]


def test_a_terminal_gets_readable_lines_not_json() -> None:
    """On a terminal the same lines are rendered for a person: no JSON braces, the message first."""
    main, replica = pty.openpty()
    process = subprocess.Popen([sys.executable, "-c", EMIT], stderr=replica, stdout=subprocess.DEVNULL)
    os.close(replica)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the terminal closes when the process ends
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait()
    os.close(main)
    text = b"".join(chunks).decode()
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 3 and "from httpx" in text and "from railyard" in text
    assert not any(line.lstrip().startswith("{") for line in lines)


async def test_requests_that_are_not_http_cost_one_line_a_minute_not_a_traceback_each(tmp_path: Path) -> None:
    """Anyone can send requests aiohttp cannot parse (a control character in a header, a chunk
    size that is not hex): each was logged at error with a traceback. Now one warning a minute,
    no traceback, counting those it stands for; a real error in a handler is still an error."""
    server = ServerProcess({**SETUP_MODE, "DATABASE_URL": f"sqlite:///{tmp_path}/logs.db"}, tmp_path)
    await server.start()
    where = URL(server.url)
    try:
        unreadable = (b"X-GitHub-Event: pi\x01ng\r\n\r\n", b"Transfer-Encoding: chunked\r\n\r\nZZ\r\n")
        for malformed in unreadable * 10:
            reader, writer = await asyncio.open_connection(where.host, where.port)
            writer.write(b"POST /webhooks HTTP/1.1\r\nHost: railyard\r\n" + malformed)
            await writer.drain()
            assert (await reader.read()).startswith(b"HTTP/1.0 400")
            writer.close()
    finally:
        server.stop()
    assert server.log is not None
    records = [json.loads(line) for line in server.log.read_text().splitlines() if line.strip()]
    refused = [r for r in records if r.get("logger") == "aiohttp.server"]

    assert len(refused) == 1 and refused[0]["level"] == "warning" and "exception" not in refused[0]
