"""tests/unit is `make check`'s pure lane: a test here that starts a process must say so.

A test marked `process` (actionlint, hadolint, the installed command, the stand-in as a
subprocess) may start one; `make check` deselects those (`-m "not process"`), `make test` runs
them. Any other test here that starts a process fails, naming the marker it lacks.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _no_process_unless_marked(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Fails a test that starts a process (subprocess, asyncio's too) without `@pytest.mark.process`."""
    if request.node.get_closest_marker("process") is None:
        name = request.node.nodeid

        def refuse(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
            pytest.fail(
                f"{name} starts a process: mark it @pytest.mark.process (make check runs without them)"
            )

        monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    yield
