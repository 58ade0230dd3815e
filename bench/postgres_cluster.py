"""A private PostgreSQL cluster for benchmarks that restart the database (never the shared one).

`initdb` into a temporary directory owned by the `postgres` account, a free port, trust
authentication on loopback only; `restart()` crashes it (`-m immediate`, as a power cut
would) or stops it cleanly, then starts it again.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from support.ports import free_port

BIN = Path(os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin"))


def _as_postgres(*command: str, timeout: float = 60.0) -> None:
    """Run a PostgreSQL binary as the postgres account (we run as root), failing loudly."""
    line = " ".join(shlex.quote(part) for part in command)
    argv = ["su", "postgres", "-s", "/bin/sh", "-c", line] if os.geteuid() == 0 else list(command)
    subprocess.run(argv, check=True, timeout=timeout, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@dataclass
class PrivateCluster:
    """One throwaway cluster; `url(name)` points at a database in it."""

    port: int = field(default_factory=free_port)
    directory: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="railyard-chaos-pg-")))

    @property
    def data(self) -> Path:
        """Its data directory."""
        return self.directory / "data"

    def start(self) -> None:
        """initdb (once) and start it; wait until it accepts connections."""
        if os.geteuid() == 0:
            shutil.chown(self.directory, "postgres")
        if not (self.data / "PG_VERSION").exists():
            _as_postgres(str(BIN / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres")
        self._ctl("start")

    def _ctl(self, action: str, *extra: str) -> None:
        options = f"-p {self.port} -k /tmp -c listen_addresses=127.0.0.1 -c fsync=on"
        log = str(self.directory / "postgres.log")
        _as_postgres(
            str(BIN / "pg_ctl"), "-D", str(self.data), "-o", options, "-l", log, "-w", action, *extra
        )

    def restart(self, *, crash: bool = True) -> None:
        """Crash (`immediate`) or stop cleanly (`fast`), then start again."""
        self._ctl("restart", "-m", "immediate" if crash else "fast")

    def create_database(self, name: str) -> str:
        """A new empty database; its SQLAlchemy URL."""
        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{self.port}/postgres", autocommit=True) as c:
            c.execute(f'CREATE DATABASE "{name}"')  # our own fixed names, never input
        return self.url(name)

    def url(self, name: str) -> str:
        """The SQLAlchemy URL of database `name` in it."""
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        """Stop it (if it runs) and delete its files."""
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            self._ctl("stop", "-m", "immediate")
        shutil.rmtree(self.directory, ignore_errors=True)
