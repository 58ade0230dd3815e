"""Loopback ports for servers that tests and benches start as processes."""

from __future__ import annotations

import itertools
import os
import random
import socket

# Below Linux's range for ephemeral ports (32768-60999 by default). A port the kernel hands out
# for `bind(0)` is also one it hands to the next outgoing connection: between the probe and the
# child's own bind, a client elsewhere in the test run took such a port once and the server
# refused to start ("already in use"). Ports here are never given out for connections.
LOWEST, HIGHEST = 20000, 32767
SLICE = 1000  # each pytest-xdist worker probes its own slice, so two workers never offer one port


def _worker_slice() -> range:
    """This process's slice: gw0 the first, gw1 the next and so on (the first without xdist)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    index = int(worker) if worker.isdigit() else 0
    start = LOWEST + (index * SLICE) % (HIGHEST - LOWEST - SLICE)
    return range(start, start + SLICE)


_candidates = itertools.cycle(random.sample(_worker_slice(), SLICE))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now and that no outgoing
    connection can be given before the server binds it."""
    for port in itertools.islice(_candidates, SLICE):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise OSError(f"no free port on 127.0.0.1 in {_worker_slice()}")
