"""The ports test servers are started on: never one the kernel could give an outgoing connection."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from support import ports


def ephemeral_range() -> range:
    """Linux's range for ports handed to outgoing connections and `bind(0)`."""
    low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    return range(int(low), int(high) + 1)


def test_a_free_port_is_outside_the_ephemeral_range_and_can_be_bound() -> None:
    port = ports.free_port()
    assert port not in ephemeral_range()
    with socket.socket() as server:
        server.bind(("127.0.0.1", port))


def test_a_port_in_use_is_not_offered() -> None:
    taken = []
    try:
        for _ in range(20):
            port = ports.free_port()
            assert port not in {s.getsockname()[1] for s in taken}
            server = socket.socket()
            server.bind(("127.0.0.1", port))
            server.listen()
            taken.append(server)
    finally:
        for server in taken:
            server.close()


@pytest.mark.parametrize("first, second", [("gw0", "gw1"), ("gw3", "gw7"), ("gw1", "gw11")])
def test_two_xdist_workers_probe_slices_that_do_not_overlap(
    monkeypatch: pytest.MonkeyPatch, first: str, second: str
) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", first)
    one = ports._worker_slice()
    monkeypatch.setenv("PYTEST_XDIST_WORKER", second)
    other = ports._worker_slice()
    assert not set(one) & set(other)
    assert max(other) <= ports.HIGHEST and min(one) >= ports.LOWEST
