"""The GitHub stand-in as a subprocess (`python -m github_standin`), seeded and inspected
over HTTP under /_standin/."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from github_standin.common import Json
from github_standin.faults import Fault
from github_standin.server import running_standin
from github_standin.state import StandinState

ROOT = Path(__file__).resolve().parents[1]  # the repository, where `python -m github_standin` runs


@dataclass
class StandinProcess:
    """A stand-in running as a subprocess, seeded and inspected through /_standin/."""

    process: subprocess.Popen[bytes]
    url: str

    def control(self, method: str, name: str, payload: Any = None) -> Any:
        response = httpx.request(method, f"{self.url}/_standin/{name}", json=payload, timeout=10)
        response.raise_for_status()
        return response.json()

    def seed(self, data: Json) -> Any:
        return self.control("POST", "state", data)

    def inject(self, method: str, path_regex: str, *faults: Fault) -> None:
        self.control(
            "POST", "faults", {"method": method, "path": path_regex, "faults": [asdict(f) for f in faults]}
        )

    def calls(self) -> Any:
        return self.control("GET", "calls")

    def watch_limits(self, grace: float = 1.0) -> None:
        """Turn on the stand-in's LimitWatch: it remembers every Retry-After it answers."""
        self.control("POST", "limits", {"grace": grace})

    def limits(self) -> Any:
        """The watch's record: `limits` [installation, sent, until], `ignored` calls made during one."""
        return self.control("GET", "limits")


@contextlib.contextmanager
def standin_subprocess(
    port_file: Path, seed: Json | None = None, timeout: float = 15.0
) -> Iterator[StandinProcess]:
    """Start `python -m github_standin`, wait for its port file, stop it afterwards."""
    command = [sys.executable, "-m", "github_standin", "--port", "0", "--port-file", str(port_file)]
    process = subprocess.Popen(command, cwd=ROOT)
    try:
        deadline = time.monotonic() + timeout
        while not port_file.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the GitHub stand-in did not start (exit code {process.poll()})")
            time.sleep(0.05)
        standin = StandinProcess(process, f"http://127.0.0.1:{int(port_file.read_text())}")
        if seed:
            standin.seed(seed)
        yield standin
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout)


async def _serve(state: StandinState, port: int, port_file: Path | None) -> None:
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    async with running_standin(state, port) as standin:
        if port_file is not None:  # written whole, then renamed: a reader never sees half a number
            partial = port_file.with_name(port_file.name + ".partial")
            partial.write_text(str(standin.port))
            partial.replace(port_file)
        print(f"GitHub stand-in listening on {standin.url}", flush=True)
        await stop.wait()


def main(argv: list[str] | None = None) -> None:
    """Serve the GitHub stand-in on 127.0.0.1 until SIGTERM or SIGINT."""
    parser = argparse.ArgumentParser(prog="python -m github_standin", description=main.__doc__)
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--port-file", type=Path, help="where to write the port once listening")
    parser.add_argument("--seed", type=Path, help="JSON in the shape POST /_standin/state takes")
    args = parser.parse_args(argv)
    state = StandinState()
    if args.seed:
        state.seed(json.loads(args.seed.read_text()))
    asyncio.run(_serve(state, args.port, args.port_file))
