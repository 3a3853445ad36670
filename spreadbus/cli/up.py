"""``spreadbus up``: the whole stack on this machine, on the embedded defaults.

Starts, in order: nats-server (store under ``DIR/nats``), kubesim with its default topology, the
CRDs and the webhook configurations (pointing at the local webhook, trusted through a
development CA made under ``DIR/tls``), then the four services as separate processes, each
with its own health port and its log in ``DIR/logs/<service>.log``.

``DIR/kubeconfig`` and ``DIR/nats-url`` are written (atomically) only once every service answers
``/readyz``, so a script can wait for them; both are removed again on shutdown, so a stale file
never suggests a stack that is gone. Ctrl-C or SIGTERM stops the services first (SIGTERM, then
SIGKILL after a grace period), then kubesim, then nats-server. A service that exits on its own
is restarted with a growing delay, as a Deployment's pod would be.

No child outlives ``spreadbus up``: every exit path of :func:`run` goes through
:meth:`Stack.stop` (signals include SIGHUP), and the exits that cannot (SIGKILL, a crash) are
covered by the children's parent-death signal (:mod:`spreadbus.runtime.parent_death`).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Any, Final

import yaml

from spreadbus.runtime.nats_server import NatsServer
from spreadbus.runtime.parent_death import die_with_parent

ROOT: Final = Path(__file__).resolve().parents[2]
DEPLOY: Final = ROOT / "deploy"
SERVICES: Final = ("watcher", "planner", "actuator", "webhook")
GRACE_SECONDS: Final = 10.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(".spreadbus"),
        help="state directory (default .spreadbus/)",
    )
    parser.add_argument(
        "--cluster", default="local", help="cluster name on the bus (default local)"
    )
    parser.add_argument(
        "--ready-timeout",
        type=float,
        default=120.0,
        help="seconds to wait for every service to be ready before giving up",
    )
    parser.add_argument(
        "--kubesim-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra argument for kubesim (repeatable), e.g. --kubesim-arg=--topology=zones",
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class StackError(RuntimeError):
    """The stack could not be brought up; the message says which part and why."""


@dataclass
class Child:
    """One supervised process."""

    name: str
    argv: list[str]
    log_path: Path
    health_port: int = 0
    process: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    next_start: float = 0.0
    _log: IO[bytes] | None = field(default=None, repr=False)

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        # Own process group: a Ctrl-C in the terminal reaches `spreadbus up` only, which
        # then stops the children in order instead of all of them at once. The parent-death
        # signal covers the exits that skip that orderly stop (SIGKILL, a crash).
        self.process = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent(),
            cwd=ROOT,
        )

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def ready(self) -> bool:
        if not self.running or not self.health_port:
            return False
        url = f"http://127.0.0.1:{self.health_port}/readyz"
        try:
            with urllib.request.urlopen(url, timeout=1.0) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def terminate(self) -> None:
        if self.running:
            assert self.process is not None
            self.process.terminate()

    def wait_or_kill(self, deadline: float) -> None:
        if self.process is None:
            return
        try:
            self.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


@dataclass
class Stack:
    data_dir: Path
    cluster: str
    kubesim_args: list[str]
    nats: NatsServer | None = None
    kubesim: Child | None = None
    services: list[Child] = field(default_factory=list)
    kubeconfig: Path = Path()
    webhook_port: int = 0

    @property
    def run_dir(self) -> Path:
        return self.data_dir / "run"

    # -- start-up -----------------------------------------------------------------------------

    def start(self, ready_timeout: float) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        for stale in ("kubeconfig", "nats-url"):
            (self.data_dir / stale).unlink(missing_ok=True)
        say("starting nats-server")
        # Assigned before it starts, so a stop arriving during start-up still finds it.
        self.nats = NatsServer(store_dir=self.data_dir / "nats")
        self.nats.start()
        tls = self._certificates()
        say("starting kubesim")
        self._start_kubesim()
        say("installing CRDs and webhook configurations")
        self._install(tls["ca"])
        for name in SERVICES:
            child = self._service(name, tls)
            child.start()
            self.services.append(child)
        say("waiting for the services to be ready")
        self._wait_ready(ready_timeout)
        publish(self.data_dir / "kubeconfig", self.kubeconfig.read_text())
        publish(self.data_dir / "nats-url", self.nats.url + "\n")

    def _certificates(self) -> dict[str, Path]:
        """A development CA (kept across runs) and a fresh serving certificate for the webhook."""
        from spreadbus.tls import CertKeyPair, issue_server_cert, make_ca

        directory = self.data_dir / "tls"
        ca_cert, ca_key = directory / "ca.crt", directory / "ca.key"
        if ca_cert.exists() and ca_key.exists():
            ca = CertKeyPair(ca_cert.read_bytes(), ca_key.read_bytes(), "ca")
        else:
            ca = make_ca("spreadbus development CA")
            ca.write(directory, "ca")
        server = issue_server_cert(ca, ["127.0.0.1", "localhost"]).write(directory, "webhook")
        return {"ca": ca_cert, "cert": server.cert, "key": server.key}

    def _start_kubesim(self) -> None:
        self.kubeconfig = self.run_dir / "kubeconfig"
        self.kubeconfig.unlink(missing_ok=True)
        port = free_port()
        argv = [
            sys.executable,
            "-m",
            "kubesim",
            "--port",
            str(port),
            "--kubeconfig",
            str(self.kubeconfig),
            *self.kubesim_args,
        ]
        self.kubesim = Child("kubesim", argv, self.data_dir / "logs" / "kubesim.log")
        self.kubesim.start()
        deadline = time.monotonic() + 60
        while not self.kubeconfig.exists():
            if not self.kubesim.running:
                raise StackError(f"kubesim exited:\n{self.kubesim.log_tail()}")
            if time.monotonic() > deadline:
                raise StackError(f"kubesim wrote no kubeconfig:\n{self.kubesim.log_tail()}")
            time.sleep(0.1)

    def _install(self, ca_file: Path) -> None:
        from kubernetes import client, config

        api: client.ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(self.kubeconfig)
        )
        with api:
            extensions = client.ApiextensionsV1Api(api)
            self.webhook_port = free_port()
            ca_bundle = base64.b64encode(ca_file.read_bytes()).decode()
            for path in sorted((DEPLOY / "crds").glob("*.yaml")):
                for doc in yaml.safe_load_all(path.read_text()):
                    if doc:
                        create_or_replace(
                            extensions.create_custom_resource_definition,
                            extensions.replace_custom_resource_definition,
                            extensions.read_custom_resource_definition,
                            local_conversion(doc, self.webhook_port, ca_bundle),
                        )
            admission = client.AdmissionregistrationV1Api(api)
            for path, create, replace, read in (
                (
                    DEPLOY / "webhook" / "mutating.yaml",
                    admission.create_mutating_webhook_configuration,
                    admission.replace_mutating_webhook_configuration,
                    admission.read_mutating_webhook_configuration,
                ),
                (
                    DEPLOY / "webhook" / "validating.yaml",
                    admission.create_validating_webhook_configuration,
                    admission.replace_validating_webhook_configuration,
                    admission.read_validating_webhook_configuration,
                ),
            ):
                doc = local_webhooks(yaml.safe_load(path.read_text()), self.webhook_port, ca_bundle)
                create_or_replace(create, replace, read, doc)

    def _service(self, name: str, tls: dict[str, Path]) -> Child:
        assert self.nats is not None
        health_port = free_port()
        argv = [
            sys.executable,
            "-m",
            f"services.{name}",
            f"--nats-url={self.nats.url}",
            f"--cluster={self.cluster}",
            "--http-host=127.0.0.1",
            f"--http-port={health_port}",
        ]
        if name in ("watcher", "actuator"):
            argv.append(f"--kubeconfig={self.kubeconfig}")
        if name == "webhook":
            argv += [
                "--host=127.0.0.1",
                f"--port={self.webhook_port}",
                f"--tls-cert={tls['cert']}",
                f"--tls-key={tls['key']}",
            ]
        return Child(name, argv, self.data_dir / "logs" / f"{name}.log", health_port)

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            self.supervise()
            waiting = [c.name for c in self.services if not c.ready()]
            if not waiting:
                return
            if time.monotonic() > deadline:
                tails = "\n".join(f"--- {n}:\n{self._child(n).log_tail()}" for n in waiting)
                raise StackError(f"not ready after {timeout:.0f}s: {', '.join(waiting)}\n{tails}")
            time.sleep(0.2)

    def _child(self, name: str) -> Child:
        return next(c for c in self.services if c.name == name)

    # -- running ------------------------------------------------------------------------------

    def supervise(self) -> None:
        """Restart services that exited, with a growing delay; kubesim dying is fatal."""
        if self.kubesim is not None and not self.kubesim.running:
            raise StackError(f"kubesim exited:\n{self.kubesim.log_tail()}")
        now = time.monotonic()
        for child in self.services:
            if child.running:
                continue
            if child.next_start == 0.0:
                child.restarts += 1
                delay = min(30.0, 0.5 * 2 ** min(child.restarts, 6))
                child.next_start = now + delay
                say(
                    f"{child.name} exited (code {child.process and child.process.returncode}), "
                    f"restarting in {delay:.1f}s; log: {child.log_path}"
                )
            elif now >= child.next_start:
                child.next_start = 0.0
                child.start()

    def status_lines(self) -> Iterator[str]:
        for child in self.services:
            state = "ready" if child.ready() else ("running" if child.running else "stopped")
            yield f"  {child.name:<9} {state:<8} health http://127.0.0.1:{child.health_port}"

    # -- shutdown -----------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop everything that was started; safe to call twice and at any point of start-up.

        Each step runs even if an earlier one failed, so one stubborn child never leaves the
        others running.
        """
        for stale in ("kubeconfig", "nats-url"):
            with contextlib.suppress(OSError):
                (self.data_dir / stale).unlink()
        deadline = time.monotonic() + GRACE_SECONDS
        try:
            for child in self.services:
                with contextlib.suppress(OSError):
                    child.terminate()
            for child in self.services:
                child.wait_or_kill(deadline)
        finally:
            try:
                if self.kubesim is not None:
                    self.kubesim.terminate()
                    self.kubesim.wait_or_kill(time.monotonic() + GRACE_SECONDS)
            finally:
                if self.nats is not None:
                    self.nats.stop()

    def __enter__(self) -> Stack:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def local_webhooks(doc: dict[str, Any], port: int, ca_bundle: str) -> dict[str, Any]:
    """The installed webhook configuration, pointed at the local webhook process by URL."""
    doc = dict(doc)
    doc["metadata"] = {"name": doc["metadata"]["name"]}
    hooks = []
    for hook in doc["webhooks"]:
        hook = dict(hook)
        path = hook["clientConfig"]["service"].get("path", "/")
        hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca_bundle}
        hooks.append(hook)
    doc["webhooks"] = hooks
    return doc


def local_conversion(crd: dict[str, Any], port: int, ca_bundle: str) -> dict[str, Any]:
    """A multi-version CRD converts through the local webhook, as the installation's does."""
    if len(crd["spec"].get("versions", [])) < 2:
        return crd
    webhook = {
        "conversionReviewVersions": ["v1"],
        "clientConfig": {"url": f"https://127.0.0.1:{port}/convert", "caBundle": ca_bundle},
    }
    spec = {**crd["spec"], "conversion": {"strategy": "Webhook", "webhook": webhook}}
    return {**crd, "spec": spec}


def create_or_replace(create: Any, replace: Any, read: Any, doc: dict[str, Any]) -> None:
    from kubernetes.client.exceptions import ApiException

    name = doc["metadata"]["name"]
    try:
        create(body=doc)
    except ApiException as exc:
        if exc.status != 409:
            raise StackError(
                f"cannot create {doc['kind']} {name}: {exc.status} {exc.body}"
            ) from exc
        current = read(name)
        doc = dict(doc)
        doc["metadata"] = {**doc["metadata"], "resourceVersion": current.metadata.resource_version}
        replace(name=name, body=doc)


def publish(path: Path, text: str) -> None:
    """Write by rename, so a reader never sees half a file."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    os.replace(partial, path)


def say(message: str) -> None:
    print(f"spreadbus up: {message}", file=sys.stderr, flush=True)


class _Stop(Exception):
    pass


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop(signal.Signals(signum).name)


def run(args: argparse.Namespace) -> int:
    stack = Stack(
        data_dir=args.data_dir.resolve(), cluster=args.cluster, kubesim_args=args.kubesim_arg
    )
    # SIGHUP too: closing the terminal must stop the stack, not orphan it.
    stopping_signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, _raise_stop) for s in stopping_signals}
    code = 0
    try:
        stack.start(args.ready_timeout)
        print(f"kubeconfig: {stack.data_dir / 'kubeconfig'}")
        print(f"nats-url:   {stack.nats.url if stack.nats else ''}")
        print("services:")
        for line in stack.status_lines():
            print(line)
        print("export KUBECONFIG=" + str(stack.data_dir / "kubeconfig"), flush=True)
        while True:
            stack.supervise()
            time.sleep(0.5)
    except _Stop as why:
        say(f"{why}: stopping")
    except StackError as exc:
        say(str(exc))
        code = 1
    finally:
        # A second signal during shutdown must not interrupt the orderly stop.
        for s in previous:
            signal.signal(s, signal.SIG_IGN)
        stack.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
    say("stopped")
    return code
