"""Comment bodies built to make a Markdown scanner backtrack: parsed by the tests, timed by
`bench/parser.py` (a test asserts no time)."""

from __future__ import annotations


def pathological_bodies(scale: int = 1) -> list[str]:
    """The bodies, each `scale` times its usual size."""
    n = scale
    return [
        "`" * 200_000 * n,
        "` `` ``` ```` " * 5_000 * n,
        "<!--" * 50_000 * n,
        "> " * 100_000 * n + "x",
        "* " * 100_000 * n + "x",
        "/" + "a" * 1_000_000 * n,
        "/claim " + "--check-in 5 " * 50_000 * n,
        "\n".join(["```"] * 50_000 * n),
        "-->" * 100_000 * n,
        "/deliver " + "artifact=https://e.x/a " * 20_000 * n,
        "\\" * 100_000 * n,
        "> a\n" * 50_000 * n + "/accept",
        "<pre>" * 100_000 * n,
    ]
