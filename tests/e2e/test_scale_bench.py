"""A smoke test of bench/scale.py: it runs tiny (two tickets, one worker) and prints its lines.

The figures are not checked (they are the benchmark's to print, not a test's to time); the
bench's own checks are: it exits 1 when any of them fails.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.postgres_cluster import BIN

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.bench
@pytest.mark.skipif(not (BIN / "initdb").exists(), reason="needs PostgreSQL's binaries for a private cluster")
def test_the_scale_bench_drains_a_tiny_backlog_and_every_check_passes() -> None:
    """Two servers and one worker on a private cluster drain two tickets' commands; the bench
    prints the drain rate and the ratio line, and order, once-only and the rate limit pass."""
    tiny = "--tickets 2 --deliveries-per-ticket 4 --workers 1 --tickets-per-installation 1 --idle-seconds 0.5"
    command = [sys.executable, "bench/scale.py", *tiny.split()]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)

    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert "workers=1  deliveries=8 " in run.stdout
    for check in (
        "every delivery processed",
        "per-ticket order kept",
        "no effect twice",
        "shared rate limit respected",
    ):
        assert f"{check}: pass" in run.stdout, run.stdout
    assert "drain rates (median of 1): 1 workers" in run.stdout
