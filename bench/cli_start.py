"""How long a `railyard` command takes to start: what an agent's workflow step pays before its
first request, and what anyone typing `railyard --help` waits for.

Runs each command `--runs` times (`python -m app.cli ...`, nothing configured: the commands
below answer without a database or a network), beside a bare interpreter's start, and with
`--against REV` the same commands from a checkout of REV (a temporary git worktree) in
alternating runs, so a machine whose speed drifts moves both. Prints the median wall time of
each and the ratio to REV's.

    python bench/cli_start.py [--runs 15] [--against HEAD~1]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = "checks:\n  required: []\n"
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("--help",),
    ("--version",),
    ("agent", "claim", "--help"),
    ("validate", "{config}"),
    ("status", "--help"),
)


def _timed(argv: list[str], cwd: Path | None = None) -> float:
    """Seconds one process took, from its start to its exit."""
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, check=False, timeout=60)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:  # a command that failed would be timed as a fast start
        raise SystemExit(
            f"{' '.join(argv)} (in {cwd or '.'}) exited {done.returncode}: {done.stderr[-500:]!r}"
        )
    return elapsed


@contextlib.contextmanager
def _worktree(rev: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "checkout"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(path), rev], cwd=ROOT, check=True, capture_output=True
        )
        try:
            yield path
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=ROOT, check=False)


def main(runs: int, against: str | None) -> None:
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack:
        config = Path(folder) / "railyard.yml"
        config.write_text(CONFIG)
        checkouts = {"this checkout": ROOT}
        if against:
            checkouts[against] = stack.enter_context(_worktree(against))
        bare = statistics.median(_timed([sys.executable, "-c", "pass"]) for _ in range(runs))
        print(f"python -c pass: {bare * 1000:.0f} ms (the interpreter's own start)", flush=True)
        for command in COMMANDS:
            argv = [word.format(config=config) for word in command]
            times: dict[str, list[float]] = {name: [] for name in checkouts}
            for run in range(runs):
                order = list(checkouts.items()) if run % 2 == 0 else list(checkouts.items())[::-1]
                for name, checkout in order:
                    times[name].append(_timed([sys.executable, "-m", "app.cli", *argv], checkout))
            medians = {name: statistics.median(values) for name, values in times.items()}
            line = ", ".join(f"{name} {value * 1000:.0f} ms" for name, value in medians.items())
            if against:
                line += f"; {medians['this checkout'] / medians[against]:.2f}x {against}'s"
            print(f"railyard {' '.join(command).replace('{config}', 'FILE')}: {line}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--against", help="a git revision to time side by side (a temporary worktree)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be 1 or more")
    main(args.runs, args.against)
