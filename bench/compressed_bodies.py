"""What gzip bombs cost `railyard serve`: its peak memory before and after four of them.

Starts a real `railyard serve` (SQLite, in a temporary directory), reads its peak resident
memory (VmHWM), posts four signed 260 KB gzip bodies that inflate to 256 MB each, at once,
with `Content-Encoding: gzip`, then prints the answers and the growth of the peak.

    python bench/compressed_bodies.py [--bombs 4]
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiohttp

from support.servers import ServerProcess, server_env, signed_headers


def peak_kib(pid: int) -> int:
    """The process's peak resident set size so far, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM")


async def post_bomb(url: str, bomb: bytes, number: int) -> int:
    """POST one signed gzip bomb; its answer's status."""
    headers = {**signed_headers(bomb, "ping", f"bomb-{number}"), "Content-Encoding": "gzip"}
    async with (
        aiohttp.ClientSession() as client,
        client.post(f"{url}/webhooks", data=bomb, headers=headers) as response,
    ):
        await response.read()
        return response.status


async def main(bombs: int) -> None:
    """Start the server, measure, bomb it, measure again."""
    bomb = gzip.compress(b" " * (256 * 1024 * 1024), compresslevel=9)
    with tempfile.TemporaryDirectory() as directory:
        workdir = Path(directory)
        server = ServerProcess(
            env=server_env(f"sqlite:///{workdir}/railyard.db", "http://127.0.0.1:9"), cwd=workdir
        )
        await server.start()
        try:
            assert server.process is not None
            before = peak_kib(server.process.pid)
            statuses = await asyncio.gather(*(post_bomb(server.url, bomb, n) for n in range(bombs)))
            await asyncio.sleep(1.0)  # let the server finish with the bodies it did not read
            after = peak_kib(server.process.pid)
        finally:
            server.stop()
    print(f"{bombs} gzip bodies of {len(bomb) / 1024:.0f} KB (256 MB inflated each), sent at once")
    print(f"answers: {sorted(statuses)}")
    print(
        f"server peak RSS: {before / 1024:.0f} MB before, {after / 1024:.0f} MB after "
        f"(+{(after - before) / 1024:.0f} MB)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bombs", type=int, default=4)
    asyncio.run(main(parser.parse_args().bombs))
