"""Stopping kubesim aborts a connection still in its TLS handshake: its socket does not outlive
the server (a test's next fixture, or the process, would otherwise find it unclosed)."""

from __future__ import annotations

import socket
import time

from kubesim import KubeSimThread


def _handshaking(sim: KubeSimThread) -> int:
    assert sim.sim is not None
    site = sim.sim._https
    assert site is not None
    return site.handshaking


def test_stopping_kubesim_aborts_a_connection_still_in_its_tls_handshake() -> None:
    # A handshake timeout far beyond the test's own: only the stop can end the handshake.
    sim = KubeSimThread(tls_handshake_timeout=600).start()
    try:
        assert sim.sim is not None
        # The peer connects and never sends a ClientHello (a client caught mid-handshake).
        peer = socket.create_connection(("127.0.0.1", sim.sim.port), timeout=10)
        deadline = time.monotonic() + 10
        while _handshaking(sim) != 1:
            assert time.monotonic() < deadline, "the handshake never started"
            time.sleep(0.01)
    finally:
        sim.stop()
    peer.settimeout(10.0)
    try:
        assert peer.recv(1) == b"", "the server left the connection open"
    except ConnectionResetError:
        pass  # aborted: as closed as it gets
    finally:
        peer.close()
