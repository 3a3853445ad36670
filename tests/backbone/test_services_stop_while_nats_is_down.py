"""Every service exits cleanly on SIGTERM while NATS is gone, whether lost or never reached."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from spreadbus.runtime.nats_server import NatsServer
from tests.backbone.service_processes import ServiceProcess, logs_on_failure
from tests.fixtures.polling import wait_until
from tlsserving import issue_server_cert, make_ca

EXIT_WITHIN_SECONDS = 15.0
SERVICES = ("watcher", "planner", "actuator", "webhook")


def service_args(name: str, nats_url: str, kubeconfig: Path, tls_dir: Path) -> list[str]:
    args = ["--nats-url", nats_url, "--cluster", "stop"]
    if name in ("watcher", "actuator"):
        args += ["--kubeconfig", str(kubeconfig)]
    if name == "watcher":
        args += ["--resources", "apps/v1/deployments"]
    if name == "webhook":
        args += ["--host", "127.0.0.1", "--port", "0",
                 "--tls-cert", str(tls_dir / "webhook.crt"),
                 "--tls-key", str(tls_dir / "webhook.key")]
    return args


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"nats://127.0.0.1:{port}"


def wait_for_each(what: str, check: Callable[[ServiceProcess], bool],
                  services: list[ServiceProcess]) -> None:
    def all_there() -> bool:
        return all(check(s) for s in services)

    with logs_on_failure(*services):
        wait_until(all_there, what=what, timeout=60, interval=0.1)


def nats_condition(service: ServiceProcess) -> object:
    conditions = service.readyz()[1].get("conditions")
    return conditions.get("nats") if isinstance(conditions, dict) else None


@contextlib.contextmanager
def all_services(nats_url: str, kubeconfig: Path, tls_dir: Path,
                 log_dir: Path) -> Iterator[list[ServiceProcess]]:
    services = [ServiceProcess(n, service_args(n, nats_url, kubeconfig, tls_dir), log_dir)
                for n in SERVICES]
    try:
        for service in services:
            service.start()
        yield services
    finally:
        for service in services:
            service.kill()


def assert_each_exits_0_on_sigterm(services: list[ServiceProcess]) -> None:
    """SIGTERM every service at once; each must exit 0 within the bound."""
    for service in services:
        assert service.process is not None
        service.process.terminate()
    deadline = time.monotonic() + EXIT_WITHIN_SECONDS
    codes: dict[str, int | str] = {}
    for service in services:
        assert service.process is not None
        try:
            codes[service.name] = service.process.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            codes[service.name] = "still running"
    assert codes == dict.fromkeys(SERVICES, 0), "\n".join(
        f"--- {s.name}:\n{s.logs()}" for s in services if codes[s.name] != 0
    )


@pytest.fixture
def tls_dir(tmp_path: Path) -> Path:
    ca = make_ca("stop test CA")
    issue_server_cert(ca, ["127.0.0.1"]).write(tmp_path / "tls", "webhook")
    return tmp_path / "tls"


def test_each_service_exits_0_on_sigterm_after_losing_nats(
    nats_server: NatsServer, kubeconfig_path: Path, tls_dir: Path, tmp_path: Path
) -> None:
    with all_services(nats_server.url, kubeconfig_path, tls_dir, tmp_path) as services:
        wait_for_each("every service to connect", lambda s: nats_condition(s) is True, services)
        nats_server.stop()
        wait_for_each("every service to see NATS gone", lambda s: nats_condition(s) is False,
                      services)
        assert_each_exits_0_on_sigterm(services)


def test_each_service_exits_0_on_sigterm_while_nats_was_never_reachable(
    kubeconfig_path: Path, tls_dir: Path, tmp_path: Path
) -> None:
    with all_services(closed_port_url(), kubeconfig_path, tls_dir, tmp_path) as services:
        wait_for_each("every health server to answer", lambda s: s.readyz()[0] == 503, services)
        assert_each_exits_0_on_sigterm(services)


def test_each_service_exits_0_on_sigterm_while_nats_hangs_unanswering(
    nats_server: NatsServer, kubeconfig_path: Path, tls_dir: Path, tmp_path: Path
) -> None:
    assert nats_server.process is not None
    server_pid = nats_server.process.pid
    with all_services(nats_server.url, kubeconfig_path, tls_dir, tmp_path) as services:
        wait_for_each("every service to connect", lambda s: nats_condition(s) is True, services)
        # A frozen server keeps its sockets open: every request, flush and drain goes unanswered.
        os.kill(server_pid, signal.SIGSTOP)
        try:
            assert_each_exits_0_on_sigterm(services)
        finally:
            os.kill(server_pid, signal.SIGCONT)
