"""What requiring the API server's client certificate costs the webhook: handshakes and reviews.

Two webhook replicas run as ``spreadbus webhook`` runs them (their own processes, real TLS, one
nats-server), one with ``--client-ca`` and one without; the client presents a certificate of
that CA to the first. Measured alternately, in rounds, so a noisy machine weighs on both alike:

- a review on a new connection (TCP connect, the TLS handshake, one pod review, close), as after
  an API server restart or once the webhook closed an idle connection;
- a review on a kept-alive connection, as nearly every review of a running API server.

Each replica goes first in every other round.

Printed: the client-side time and the webhook process's CPU time (user plus system, from
``/proc``) per review for each, and ``ratio`` lines, with against without client certificates.
The handshake ratio is expected above 1 (one more signature to verify); the kept-alive one
near 1 (nothing changes once the connection is up). Run:
``python -m bench.webhook_client_certificates [--connections 300] [--reviews 2000] [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import ssl
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench import _tiny
from bench._bus import set_up
from spreadbus.cli.local_stack import Child
from spreadbus.runtime.nats_server import NatsServer
from tlsserving import PemPaths, issue_client_cert, issue_server_cert, make_ca


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pod_review() -> bytes:
    """A pod CREATE review that no WorkloadSpread matches: the whole answer path, no reservation."""
    body = json.dumps({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "operation": "CREATE", "namespace": "default", "name": "",
            "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller"},
            "object": {"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"generateName": "web-", "namespace": "default",
                                    "labels": {"app": "web"}},
                       "spec": {"containers": [{"name": "app", "image": "nginx:1"}]}},
            "oldObject": None, "dryRun": False,
        },
    }).encode()
    return (b"POST /mutate-pod HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body))


def answer(tls: ssl.SSLSocket) -> None:
    """Read one response framed by Content-Length."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += tls.recv(65536)
    head, _, rest = data.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(f"webhook answered {head[:80]!r}")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    while len(rest) < length:
        rest += tls.recv(65536)


class Replica:
    def __init__(self, name: str, child: Child, context: ssl.SSLContext) -> None:
        self.name = name
        self.child = child
        self.context = context
        self.port = child.reported_port("webhook listening")
        assert child.process is not None
        self.pid = child.process.pid

    def connect(self) -> ssl.SSLSocket:
        raw = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        return self.context.wrap_socket(raw, server_hostname="127.0.0.1")

    def new_connections(self, count: int, request: bytes) -> tuple[float, float]:
        """Seconds of wall time and of webhook CPU for ``count`` reviews, one connection each."""
        cpu, started = cpu_seconds(self.pid), time.perf_counter()
        for _ in range(count):
            with self.connect() as tls:
                tls.sendall(request)
                answer(tls)
        return time.perf_counter() - started, cpu_seconds(self.pid) - cpu

    def kept_alive(self, count: int, request: bytes) -> tuple[float, float]:
        with self.connect() as tls:
            tls.sendall(request)
            answer(tls)
            cpu, started = cpu_seconds(self.pid), time.perf_counter()
            for _ in range(count):
                tls.sendall(request)
                answer(tls)
            return time.perf_counter() - started, cpu_seconds(self.pid) - cpu


def start(name: str, argv: list[str], log: Path) -> Child:
    child = Child(name, argv, log)
    child.start()
    deadline = time.monotonic() + 60
    while not (child.reported_port("webhook listening") and child.ready()):
        if not child.running or time.monotonic() > deadline:
            raise RuntimeError(f"{name} did not start:\n{child.log_tail()}")
        time.sleep(0.1)
    return child


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--connections", type=int, default=300,
                        help="reviews on new connections per round and replica")
    parser.add_argument("--reviews", type=int, default=2000,
                        help="reviews on one kept-alive connection per round and replica")
    parser.add_argument("--rounds", type=int, default=5,
                        help="rounds; each replica goes first in every other one")
    args = _tiny.arguments(parser, argv, {"connections": 3, "reviews": 10, "rounds": 1})
    with tempfile.TemporaryDirectory(prefix="spreadbus-bench-") as tmp:
        d = Path(tmp)
        ca = make_ca("bench CA")
        ca_file = ca.write(d, "ca").cert
        server: PemPaths = issue_server_cert(ca, ["127.0.0.1"]).write(d, "webhook")
        client = issue_client_cert(ca, "kube-apiserver").write(d, "client")
        nats = NatsServer(store_dir=d / "nats").start()
        children: list[Child] = []
        try:
            asyncio.run(set_up(nats.url))
            base = [sys.executable, "-m", "services.webhook", f"--nats-url={nats.url}",
                    "--cluster=bench", "--host=127.0.0.1", "--port=0",
                    "--http-host=127.0.0.1", "--http-port=0",
                    f"--tls-cert={server.cert}", f"--tls-key={server.key}"]
            plain_child = start("plain", base, d / "plain.log")
            children.append(plain_child)
            mtls_child = start("mtls", [*base, f"--client-ca={ca_file}"], d / "mtls.log")
            children.append(mtls_child)
            anonymous = ssl.create_default_context(cafile=str(ca_file))
            certified = ssl.create_default_context(cafile=str(ca_file))
            certified.load_cert_chain(client.cert, client.key)
            replicas = [Replica("without", plain_child, anonymous),
                        Replica("with", mtls_child, certified)]
            request = pod_review()
            totals = {(r.name, kind): [0.0, 0.0] for r in replicas
                      for kind in ("new", "kept")}
            for replica in replicas:  # warm up both
                replica.new_connections(20, request)
                replica.kept_alive(200, request)
            for round_ in range(args.rounds):
                # each replica goes first in every other round: neither gains from the order
                for replica in replicas if round_ % 2 == 0 else replicas[::-1]:
                    for kind, run, count in (("new", replica.new_connections, args.connections),
                                             ("kept", replica.kept_alive, args.reviews)):
                        wall, cpu = run(count, request)
                        totals[(replica.name, kind)][0] += wall / count
                        totals[(replica.name, kind)][1] += cpu / count
        finally:
            for child in children:
                child.terminate()
                child.wait_or_kill(time.monotonic() + 10)
            nats.stop()
    print(f"cores: {os.cpu_count()}, {args.rounds} rounds of {args.connections} new connections "
          f"and {args.reviews} kept-alive reviews per replica")
    for kind, what in (("new", "review on a new connection (handshake included)"),
                       ("kept", "review on a kept-alive connection")):
        per = {name: [v / args.rounds * 1e6 for v in totals[(name, kind)]]
               for name in ("without", "with")}
        for name in ("without", "with"):
            wall, cpu = per[name]
            print(f"{what}, {name} client certificates: {wall:.0f} us, webhook CPU {cpu:.0f} us")
        print(f"ratio {kind} time with/without client certificates: "
              f"{per['with'][0] / per['without'][0]:.3f}")
        without_cpu = per["without"][1]  # clock ticks: a tiny run may see none
        cpu_ratio = per["with"][1] / without_cpu if without_cpu else float("nan")
        print(f"ratio {kind} webhook CPU with/without client certificates: {cpu_ratio:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
