"""The comment parser on inputs built to make a scanner backtrack: seconds per body, and at twice
the size, so that linear time shows as a ratio near 2 (quadratic would show near 4).

    python bench/parser.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from policies.parser import parse_comment
from support.pathological import pathological_bodies


def seconds(body: str) -> float:
    """Wall time of one parse."""
    started = time.perf_counter()
    parse_comment(body)
    return time.perf_counter() - started


def main() -> None:
    """Print each body's parse time at its usual size and at twice it."""
    print(f"{'body':<42} {'size':>9} {'1x s':>8} {'2x s':>8} {'ratio':>6}")
    for body, double in zip(pathological_bodies(1), pathological_bodies(2), strict=True):
        one, two = seconds(body), seconds(double)
        label = repr(body[:36])
        print(
            f"{label:<42} {len(body):>9} {one:>8.3f} {two:>8.3f} {two / one if one else 0:>6.2f}", flush=True
        )


if __name__ == "__main__":
    main()
