"""The local stack's supervisor: nats-server, kubesim and the four services as processes.

:class:`Stack` starts, in order: nats-server (store under ``DIR/nats``), then sets up its streams
and buckets as ``spreadbus bus-setup`` does (as the ``setup`` user), kubesim with its default
topology, the webhook replicas (``webhook_replicas``, default one: ``webhook``, ``webhook-2``...),
the CRDs and the webhook configurations (the installation's Service, whose endpoints are the local
replicas, trusted through a development CA made under ``DIR/tls``), then the other three
services, each with its own health port and its log in ``DIR/logs/<service>.log``. While
supervising, a webhook replica that does not answer ``/readyz`` is moved to the endpoints'
``notReadyAddresses`` (and back once ready), so the API server stops calling it, as the
endpoints controller does for a pod failing its readiness probe.

The review paths are authenticated as in a cluster: the webhooks run with ``--client-ca`` (the
development CA) and kubesim presents a client certificate that CA issued
(``--webhook-client-cert``, written beside the CA as ``apiserver-client.crt``), so a review
that does not come from kubesim is refused in its TLS handshake. Each replica serves conversions
on a port of its own (``--conversion-port``, the Service's ``conversion`` port), which asks for
the same certificate: kubesim presents it there too (``--webhook-client-cert-for-conversions``),
which kube-apiserver has no setting for (a cluster's installation serves that port without, see
deploy/README.md).

Ports. Every child binds port 0 and reports the port it got: kubesim in the kubeconfig it
writes, a service in its JSON log (``health server listening`` and ``webhook listening``, with
``port``), read from the part of the log written since its start. Nothing picks a port ahead of
the child that binds it, so several stacks can start at once. A restarted child is given the
port it reported before, since the webhook configurations and the status lines name it.

The bus is authenticated as a cluster's is (:mod:`spreadbus.runtime.bus_permissions`): each service
connects as its own nkey user, allowed only what it does (the actuator's plan consumer is that of
``cluster``), and ``DIR/credentials`` holds the seeds (kept across runs), ``setup.nk`` (the only
user that configures streams) and ``reader.nk`` among them: the read-only user for a person or tool
watching the bus (``spreadbus`` commands find it there). NATS takes TLS connections only, with a
certificate from the development CA (``DIR/tls``), as the deployed servers do.
``Stack(secured_bus=False)`` runs the bus open instead (no users, no TLS; the webhooks keep their
TLS and client certificates): only for measuring what securing the bus costs, never the default,
and no ``spreadbus up`` option selects it.

The cluster is kept with the bus: kubesim persists its objects in ``DIR/kubesim/state.json``
(``--state``: saved every few seconds while they change, and on stop, which stops kubesim only
after the services), so a stack started again on the same directory has the objects the bus's
history describes, under the same uids and with resourceVersions that go on from there. A
directory whose bus holds streams but no kubesim state (a release that did not keep it, or a
kubesim killed before it saved) is refused: starting on it would mix runs.

``DIR/kubeconfig`` and ``DIR/nats-url`` are written (atomically) only once every service answers
``/readyz``; both are removed again on shutdown. The stack holds ``DIR/lock`` from its start to
the end of its stop (:mod:`spreadbus.cli.data_dir_lock`), so a second stack on the same
directory is refused before it starts or removes anything. :meth:`Stack.stop` stops the
services first (SIGTERM, then SIGKILL after a grace period), then kubesim, then nats-server; it
is safe at any point of start-up. A service that exits on its own is restarted with a growing delay
(:meth:`Stack.supervise`), as a Deployment's pod would be, and the delay starts again from its
shortest once the service has stayed up for ``HEALTHY_RESET_SECONDS`` (Kubernetes resets a
container's back-off after ten minutes of running; a local stack is restarted by hand long
before that). nats-server is supervised the same way and restarted on its port and store, so
the services reconnect to it; each restart is said on the terminal. Each child's log file
handle is closed before its next start.

``nats_servers=3`` (``spreadbus up --nats-servers 3``) runs a JetStream cluster of three
nats-servers instead of one (:mod:`spreadbus.runtime.nats_cluster`): each with its store under
``DIR/nats/<server>``, the same TLS and users, routes on loopback ports authenticated by a
password kept in ``DIR/credentials/nats-route`` (mode 0600); the streams, buckets and object
store are created at three replicas, and every service is given every server's URL, so a
service whose server dies carries on through another. Each server is supervised on its own and
rejoins with its store, catching up from the others. A directory is kept for the number of
servers it was started with: starting it with another number is refused, naming what to remove.

``members`` (``spreadbus up --members``) adds member clusters: the stack's own kubesim runs as a
control plane (``--control-plane``: no nodes, no workloads; the host holds the policies and the
members' Cluster objects) and its nats-server is the hub, its JetStream domain ``hub`` and a leaf
port (TLS) that each member's leaf nats-server dials as the member's leaf user
(:mod:`spreadbus.runtime.member_bus`). Per member (:class:`MemberCluster`), in
``DIR/members/<member>``: the leaf server's store, in a domain named for the member and with the
member's bus users (:mod:`spreadbus.runtime.member_permissions`), set up as ``spreadbus
bus-setup --member`` does (the hub's as ``--members`` does); a kubesim of its own; and the
member's agent (webhook, watcher, actuator; ``--cluster <member>``, logs under
``DIR/logs/<member>``), connected to the leaf server, its watcher registering the member's Cluster
in the host and its actuator reading there the governors of the plans it applies: the bindings
of propagated copies and the host's UnitedDeployments (``--host-kubeconfig``, ``--host-cluster``
the host's ``cluster``); the host's planner and webhooks run ``--uniteddeployment-control-plane``.
Every watcher, the host's and the members', also watches ConfigMaps and ClusterRoles
(``--propagate-configmaps=true``, ``--propagate-clusterroles=true``), which propagation copies
whole. ``DIR/kubeconfig`` then has
a context per cluster: ``host``, the current one, and one per member. Members run with a
single hub server only.

``planner_shards=N`` (``spreadbus up --shards N``, more than one) runs N planner shard groups
instead of one planner, as ``deploy/components/planner-shards`` does: ``planner-0`` to
``planner-<N-1>``, each ``--shards N --shard i`` (its namespaces' partition, its own lease and
snapshot, :mod:`events.shards`), the bus set up with the stream they read and the planner user
allowed to read it.

Every file holding a secret (the kubeconfigs, with kubesim's token; the nkey seeds; the private
keys under ``DIR/tls``) is created mode 0600 (:func:`tlsserving.write_secret`), never widened
first and narrowed after.

Signatures::

    Stack(data_dir: Path, cluster: str, kubesim_args: list[str], webhook_replicas: int = 1,
          service_env: dict[str, str] = {}, secured_bus: bool = True, nats_servers: int = 1,
          planner_shards: int = 1)
        .start(ready_timeout: float) -> None        # raises StackError naming the part
        .supervise() -> None ; .status_lines() -> Iterator[str] ; .stop() -> None
    Child(name, argv, log_path, env={}) ; .reported_port(message: str) -> int
    webhook_names(replicas: int) -> list[str] ; planner_names(shards: int) -> list[str]
    free_port() -> int      # for callers that must name a port up front (benchmarks)

Installing the manifests is :mod:`spreadbus.cli.local_install`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any, Final

import yaml

from spreadbus.cli.bus_setup import BusSetupSettings, SetupFailed, layout_of, set_up
from spreadbus.cli.data_dir_lock import DataDirLock
from spreadbus.cli.kubeconfig_contexts import merged_kubeconfig
from spreadbus.cli.local_install import SERVICE_DNS, install, write_endpoints
from spreadbus.cli.stack_errors import StackError
from spreadbus.engine.feature_set import bus_accesses
from spreadbus.features.registry import PluginError, features
from spreadbus.runtime.bus_layout import SNAPSHOT_BUCKET
from spreadbus.runtime.bus_permissions import (
    READER,
    SETUP,
    inbox_prefix,
    permissions,
    server_users,
)
from spreadbus.runtime.bus_users import ensure_users, local_ca, local_seed, seed_file
from spreadbus.runtime.member_bus import (
    ensure_leaf_password,
    hub_server_config,
    start_member_server,
)
from spreadbus.runtime.member_permissions import member_server_users, member_user, member_users
from spreadbus.runtime.nats_cluster import NatsCluster
from spreadbus.runtime.nats_server import NatsServer, ServerConfig
from spreadbus.runtime.parent_death import die_with_parent
from spreadbus.runtime.settings import ENV_PREFIX, load_settings
from tlsserving import CertKeyPair, issue_client_cert, issue_server_cert, make_ca
from tlsserving.secret_files import write_secret

ROOT: Final = Path(__file__).resolve().parents[2]
SERVICES: Final = ("watcher", "planner", "actuator", "webhook")
MEMBER_SERVICES: Final = ("webhook", "watcher", "actuator")
"""A member's agent, in the order it starts: the webhook first, as on the host."""
HOST_CONTEXT: Final = "host"
"""The host's context in the kubeconfig of a stack with member clusters."""
WEBHOOK: Final = "webhook"
PLANNER: Final = "planner"
GRACE_SECONDS: Final = 10.0
NATS_MAX_PAYLOAD: Final = "8MB"
"""As ``deploy/nats/config.yaml`` sets it (a test checks they agree): larger than any object the
Kubernetes API stores, so an observation is published whole; a larger one becomes a marker."""
HEALTHY_RESET_SECONDS: Final = 60.0
"""Running this long without exiting, a child's next restart comes after the shortest delay."""
FIRST_DELAY_SECONDS: Final = 0.5
MAX_DELAY_SECONDS: Final = 30.0


@dataclass
class Backoff:
    """When to restart one child: doubling delays from half a second up to 30 s, starting over
    once the child has stayed up ``HEALTHY_RESET_SECONDS``. Time is a parameter."""

    restarts: int = 0
    """Restarts since the child last stayed up for ``HEALTHY_RESET_SECONDS``."""
    next_start: float | None = None
    """When the exited child is due to start again; ``None`` while it runs."""
    started_at: float = 0.0

    def started(self, now: float) -> None:
        self.started_at, self.next_start = now, None

    def running(self, now: float) -> None:
        if self.restarts and now - self.started_at >= HEALTHY_RESET_SECONDS:
            self.restarts = 0

    def exited(self, now: float) -> float | None:
        """The delay before the restart, when the exit is new; ``None`` if already scheduled."""
        if self.next_start is not None:
            return None
        self.restarts += 1
        delay = min(MAX_DELAY_SECONDS, FIRST_DELAY_SECONDS * 2.0 ** min(self.restarts - 1, 6))
        self.next_start = now + delay
        return delay

    def due(self, now: float) -> bool:
        return self.next_start is not None and now >= self.next_start
PORT_ZERO: Final = "0"
HEALTH_PORT_ZERO: Final = "--http-port=0"
HEALTH_LISTENING: Final = "health server listening"
WEBHOOK_LISTENING: Final = "webhook listening"
CONVERSION_LISTENING: Final = "webhook conversion listening"
API_SERVER_IDENTITY: Final = "spreadbus-apiserver-webhook-client"
"""The common name of the client certificate kubesim presents to the webhook."""


def webhook_names(replicas: int) -> list[str]:
    """``webhook``, then ``webhook-2``, ``webhook-3``...: the first keeps the single name."""
    return [WEBHOOK if i == 1 else f"{WEBHOOK}-{i}" for i in range(1, max(replicas, 1) + 1)]


def planner_names(shards: int) -> list[str]:
    """The planner processes: ``planner``, or one per shard, ``planner-0`` to ``planner-<N-1>``."""
    return [PLANNER] if shards == 1 else [f"{PLANNER}-{i}" for i in range(shards)]


def free_port() -> int:
    """A port free right now (for callers that must name one up front; racy by nature)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Child:
    """One supervised process."""

    name: str
    argv: list[str]
    log_path: Path
    health_port: int = 0
    process: subprocess.Popen[bytes] | None = None
    backoff: Backoff = field(default_factory=Backoff)
    port_message: str = HEALTH_LISTENING
    """The log line (``msg``) in which the child reports the health port it bound."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables set for this child (every start) on top of the supervisor's environment."""
    _log: IO[bytes] | None = field(default=None, repr=False)
    _log_start: int = field(default=0, repr=False)

    def start(self) -> None:
        self.backoff.started(time.monotonic())
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.close_log()  # a restart must not leak the previous run's handle
        self._log = self.log_path.open("ab")
        self._log_start = self._log.tell()
        argv = self.argv
        if self.health_port:
            # A restart keeps the port this child bound (and reported) before.
            argv = [f"--http-port={self.health_port}" if a == HEALTH_PORT_ZERO else a
                    for a in argv]
        # Own process group: a Ctrl-C in the terminal reaches `spreadbus up` only, which
        # then stops the children in order instead of all of them at once. The parent-death
        # signal covers the exits that skip that orderly stop (SIGKILL, a crash).
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent(),
            cwd=ROOT,
            env={**os.environ, **self.env} if self.env else None,
        )

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def reported_port(self, message: str) -> int:
        """The port named by this run's JSON log line ``message``, or 0 before it appears."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(self._log_start)
                lines = log.read().splitlines()
        except OSError:
            return 0
        for line in lines:
            if not line.startswith(b"{"):
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("msg") == message:
                port = record.get("port")
                if isinstance(port, int) and port > 0:
                    return port
        return 0

    def ready(self) -> bool:
        if not self.running:
            return False
        if not self.health_port:
            self.health_port = self.reported_port(self.port_message)
            if not self.health_port:
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
        self.close_log()

    def close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


@dataclass
class MemberCluster:
    """One member cluster of the stack: its kubesim, its leaf nats-server (a JetStream domain of
    its own, dialing the hub) and its agent (webhook, watcher, actuator, each ``--cluster``
    the member's name and connected to the leaf server as the member's users)."""

    name: str
    kubesim_args: list[str]
    server: NatsServer | None = None
    backoff: Backoff = field(default_factory=Backoff)
    kubesim: Child | None = None
    kubeconfig: Path = Path()
    services: list[Child] = field(default_factory=list)
    webhook_ports: list[int] = field(default_factory=list)
    conversion_ports: list[int] = field(default_factory=list)
    endpoints_ready: tuple[bool, ...] = ()


@dataclass
class Stack:
    data_dir: Path
    cluster: str
    kubesim_args: list[str]
    nats: NatsServer | None = None
    """The (first) nats-server."""
    nats_members: list[NatsServer] = field(default_factory=list)
    """Every nats-server: one, or each member of the cluster."""
    nats_backoffs: list[Backoff] = field(default_factory=list)
    kubesim: Child | None = None
    services: list[Child] = field(default_factory=list)
    kubeconfig: Path = Path()
    webhook_replicas: int = 1
    """Webhook processes, all behind the one webhook Service (``Endpoints`` with a port each)."""
    webhook_ports: list[int] = field(default_factory=list)
    webhook_port: int = 0
    conversion_ports: list[int] = field(default_factory=list)
    """Each webhook replica's conversion port (asking kubesim's client certificate too)."""
    """The first replica's port."""
    endpoints_ready: tuple[bool, ...] = ()
    """Readiness of each webhook replica as the Service's endpoints last listed it."""
    service_env: dict[str, str] = field(default_factory=dict)
    """Settings (``SPREADBUS_*``) for the four services, restarts included; this process's own
    environment is left as it is."""
    secured_bus: bool = True
    """Users, permissions and TLS on the bus. ``False`` (benchmarks only) runs nats-server open
    to anyone who reaches its port, to measure the secured bus against."""
    nats_servers: int = 1
    """nats-servers in the bus: one, or a JetStream cluster (three) whose streams and buckets
    have as many replicas."""
    members: dict[str, list[str]] = field(default_factory=dict)
    """Member clusters (name -> its kubesim's arguments). With any, the stack's own cluster is
    a control-plane host (kubesim ``--control-plane``) and its nats-server the hub of the
    members' leaf servers."""
    member_clusters: list[MemberCluster] = field(default_factory=list)
    planner_shards: int = 1
    """Planner shard groups (:func:`planner_names`): one planner, or that many shards."""
    _lock: DataDirLock | None = field(default=None, repr=False)

    @property
    def every_service(self) -> list[Child]:
        """The host's services and every member's."""
        return [*self.services, *(c for m in self.member_clusters for c in m.services)]

    @property
    def run_dir(self) -> Path:
        return self.data_dir / "run"

    # -- start-up -----------------------------------------------------------------------------

    def claim(self) -> None:
        """Lock the data directory for this stack (:mod:`spreadbus.cli.data_dir_lock`), or raise
        :class:`~spreadbus.cli.data_dir_lock.DataDirInUse` naming the process that holds it."""
        if self._lock is None:
            self._lock = DataDirLock(self.data_dir)
        self._lock.acquire()

    @property
    def kubesim_state(self) -> Path:
        return self.data_dir / "kubesim" / "state.json"

    @property
    def nats_urls(self) -> list[str]:
        return [server.url for server in self.nats_members]

    def _refuse_a_bus_without_its_cluster(self) -> None:
        bus = self.data_dir / "nats"
        kept = kept_bus_servers(bus)
        if kept and kept != self.nats_servers:
            raise StackError(
                f"{bus} holds a bus of {kept} nats-server{'s' if kept > 1 else ''}, not "
                f"{self.nats_servers}: start it with --nats-servers {kept}, or remove {bus} and "
                f"{self.kubesim_state.parent} to start both afresh")
        stores = [(bus, self.kubesim_state)] + [
            (self.data_dir / "members" / m / "nats",
             self.data_dir / "members" / m / "kubesim" / "state.json") for m in self.members]
        for store, state in stores:
            if not state.exists() and any(store.glob("**/jetstream/*/streams/*")):
                raise StackError(
                    f"{store} holds the bus of an earlier run whose cluster was not kept "
                    f"({state} is missing): remove {store} to start both afresh, or "
                    "choose another --data-dir")

    def start(self, ready_timeout: float) -> None:
        self.claim()
        if self.members and self.nats_servers != 1:
            raise StackError("a stack with member clusters runs one hub nats-server, not "
                             f"{self.nats_servers}")
        if self.members and not self.secured_bus:
            raise StackError("a stack with member clusters runs a secured bus only: a member's "
                             "users are what keep it to its own subjects")
        self._refuse_a_bus_without_its_cluster()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        for stale in ("kubeconfig", "nats-url"):
            (self.data_dir / stale).unlink(missing_ok=True)
        self._start_nats()
        self._start_member_servers()
        say("setting up the bus's streams and buckets")
        for member in self.member_clusters:
            assert member.server is not None
            self._set_up_bus([member.server.url], member=member.name)
        self._set_up_bus(self.nats_urls, members=list(self.members))
        tls = self._certificates()
        say("starting kubesim" + (" (the host's control plane)" if self.members else ""))
        self._start_kubesim(tls)
        # The webhooks first: the Service's endpoints name their ports, which each binds itself
        # and reports.
        webhooks = [self._service(name, tls) for name in webhook_names(self.webhook_replicas)]
        for webhook in webhooks:
            webhook.start()
            self.services.append(webhook)
        self.webhook_ports = []
        self.conversion_ports = []
        for webhook in webhooks:
            port, conversion = self._pin_webhook_ports(webhook, ready_timeout)
            self.webhook_ports.append(port)
            self.conversion_ports.append(conversion)
        self.webhook_port = self.webhook_ports[0]
        say("installing CRDs and webhook configurations")
        install(self.kubeconfig, self.webhook_ports, tls["ca"], self.conversion_ports)
        self.endpoints_ready = (True,) * len(self.webhook_ports)
        for name in SERVICES:
            if name == WEBHOOK:
                continue
            for child_name in planner_names(self.planner_shards) if name == PLANNER else [name]:
                child = self._service(child_name, tls)
                child.start()
                self.services.append(child)
        for member in self.member_clusters:
            self._start_member(member, tls, ready_timeout)
        say("waiting for the services to be ready")
        self._wait_ready(ready_timeout)
        # kubesim's bearer token: the owner's alone (no one else on the host runs the cluster)
        write_secret(self.data_dir / "kubeconfig", self._kubeconfig_contents())
        publish(self.data_dir / "nats-url", ",".join(self.nats_urls) + "\n")

    def _pin_webhook_ports(self, webhook: Child, timeout: float) -> tuple[int, int]:
        """The review and conversion ports the webhook reported, kept for its restarts."""
        port = self._reported(webhook, WEBHOOK_LISTENING, timeout)
        conversion = self._reported(webhook, CONVERSION_LISTENING, timeout)
        webhook.argv = [a.replace(f"--port={PORT_ZERO}", f"--port={port}")
                         .replace(f"--conversion-port={PORT_ZERO}",
                                  f"--conversion-port={conversion}")
                        for a in webhook.argv]
        return port, conversion

    def _kubeconfig_contents(self) -> bytes:
        """The host's kubeconfig; with members, one context per cluster (the host's current)."""
        if not self.member_clusters:
            return self.kubeconfig.read_bytes()
        contexts = {HOST_CONTEXT: yaml.safe_load(self.kubeconfig.read_text())}
        for member in self.member_clusters:
            contexts[member.name] = yaml.safe_load(member.kubeconfig.read_text())
        return yaml.safe_dump(merged_kubeconfig(contexts, HOST_CONTEXT),
                              sort_keys=False).encode()

    # -- member clusters ----------------------------------------------------------------------

    @property
    def leaf_url(self) -> str:
        """Where the members' leaf servers dial the hub."""
        return f"nats-leaf://127.0.0.1:{self._leaf_port()}"

    def _leaf_port(self) -> int:
        """The hub's leaf port, chosen at the first start and kept in the run directory."""
        path = self.run_dir / "leaf-port"
        if not path.exists():
            publish(path, f"{free_port()}\n")
        return int(path.read_text())

    def _start_member_servers(self) -> None:
        """Each member's leaf nats-server: its own domain, its users (the member's agent, and
        ``setup`` and ``reader``), TLS from the development CA, dialing the hub's leaf port
        over TLS as the member's leaf user."""
        if not self.members:
            return
        accesses = bus_accesses(self._features())
        clusters = [self.cluster, *self.members]
        tls = self.data_dir / "tls"
        for name, kubesim_args in self.members.items():
            member = MemberCluster(name, kubesim_args)
            self.member_clusters.append(member)
            agent = member_server_users(ensure_users(self.credentials_dir, member_users(name)),
                                        name, accesses, clusters=clusters)
            block = server_users(ensure_users(self.credentials_dir, (SETUP, READER)), accesses,
                                 clusters=clusters, members=list(self.members),
                                 extra_users=agent)
            base = ServerConfig(max_payload=NATS_MAX_PAYLOAD, tls_cert=tls / "nats.crt",
                                tls_key=tls / "nats.key", blocks=(block,))
            say(f"starting {name}'s leaf nats-server")
            member.server = start_member_server(
                self.data_dir / "members" / name / "nats", self.run_dir, name, self.leaf_url,
                ensure_leaf_password(self.credentials_dir, name), base=base,
                hub_ca=local_ca(self.data_dir))
            member.backoff.started(time.monotonic())

    def _start_member(self, member: MemberCluster, tls: dict[str, Path], timeout: float) -> None:
        """The member's kubesim, then its webhook (installed there as on the host), then its
        watcher (which registers the member's Cluster in the host) and actuator."""
        say(f"starting {member.name}: kubesim and its agent")
        member.kubeconfig = self.run_dir / f"{member.name}-kubeconfig"
        state = self.data_dir / "members" / member.name / "kubesim" / "state.json"
        member.kubesim = self._kubesim_child(f"{member.name}/kubesim", member.kubeconfig, state,
                                             member.kubesim_args, tls)
        webhook = self._service(WEBHOOK, tls, member)
        webhook.start()
        member.services.append(webhook)
        port, conversion = self._pin_webhook_ports(webhook, timeout)
        member.webhook_ports, member.conversion_ports = [port], [conversion]
        install(member.kubeconfig, member.webhook_ports, tls["ca"], member.conversion_ports)
        member.endpoints_ready = (True,)
        for name in MEMBER_SERVICES[1:]:
            child = self._service(name, tls, member)
            child.start()
            member.services.append(child)

    @property
    def credentials_dir(self) -> Path:
        return self.data_dir / "credentials"

    def bus_options(self, user: str = READER) -> dict[str, Any]:
        return bus_options(self.data_dir, user) if self.secured_bus else {}

    def _start_nats(self) -> None:
        """One nats-server with its store in ``DIR/nats``, or a cluster of ``nats_servers``
        with theirs in ``DIR/nats/<server>``, ready (a meta leader elected) on return."""
        # Assigned before they start, so a stop arriving during start-up still finds them.
        if self.nats_servers == 1:
            say("starting nats-server" + (" (the hub)" if self.members else ""))
            self.nats_members = [NatsServer(store_dir=self.data_dir / "nats",
                                            extra_args=["-c", str(self._nats_config())])]
        else:
            say(f"starting a JetStream cluster of {self.nats_servers} nats-servers")
            cluster = NatsCluster(store_root=self.data_dir / "nats", config_dir=self.run_dir,
                                  size=self.nats_servers, base=self._server_config(),
                                  password=self._route_password())
            self.nats_members = cluster.configure()
        self.nats = self.nats_members[0]
        self.nats_backoffs = [Backoff() for _ in self.nats_members]
        if self.nats_servers == 1:
            self.nats.start()
        else:
            cluster.start()
        for backoff in self.nats_backoffs:
            backoff.started(time.monotonic())

    def _route_password(self) -> str:
        """The cluster routes' password, made once under ``DIR/credentials`` and kept."""
        path = self.credentials_dir / "nats-route"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            write_secret(path, secrets.token_urlsafe(24).encode())
        return path.read_text().strip()

    def _server_config(self) -> ServerConfig:
        """The server settings the local stack shares with ``deploy/nats`` (``max_payload``,
        TLS from the development CA, a user per service) for the features the services run;
        ``max_payload`` alone on an open bus."""
        if not self.secured_bus:
            return ServerConfig(max_payload=NATS_MAX_PAYLOAD)
        keys = ensure_users(self.credentials_dir)
        tls = self.data_dir / "tls"
        issue_server_cert(self._development_ca(), ["127.0.0.1", "localhost"]).write(tls, "nats")
        users = server_users(keys, bus_accesses(self._features()), clusters=[self.cluster],
                             shards=self.planner_shards, snapshot_bucket=self._snapshot_bucket())
        return ServerConfig(max_payload=NATS_MAX_PAYLOAD, tls_cert=tls / "nats.crt",
                            tls_key=tls / "nats.key", blocks=(users,))

    def _nats_config(self) -> Path:
        """The single server's configuration file; with members, the hub's: its domain, the
        leaf port (TLS) and the members' leaf users beside the bus users."""
        path = self.run_dir / "nats.conf"
        if not self.members:
            path.write_text(self._server_config().render())
            return path
        base = self._server_config()
        users: list[dict[str, Any]] = []
        if self.secured_bus:
            accesses = bus_accesses(self._features())
            users = [{"nkey": key, "permissions": permissions(
                user, accesses, snapshot_bucket=self._snapshot_bucket(), clusters=[self.cluster],
                members=list(self.members))}
                for user, key in ensure_users(self.credentials_dir).items()]
        passwords = {m: ensure_leaf_password(self.credentials_dir, m) for m in self.members}
        config = hub_server_config(f"127.0.0.1:{self._leaf_port()}", passwords,
                                   base=replace(base, blocks=()), users=users)
        write_secret(path, config.render().encode())  # the leaf users' passwords
        return path

    def _features(self) -> list[Any]:
        plugins = self.service_env.get("SPREADBUS_FEATURE_PLUGINS", "")
        return list(features([p for p in plugins.split(",") if p]))

    def _snapshot_bucket(self) -> str:
        return self.service_env.get(f"{ENV_PREFIX}SNAPSHOT_BUCKET", SNAPSHOT_BUCKET)

    def _set_up_bus(self, urls: list[str], *, member: str = "",
                    members: list[str] | None = None) -> None:
        """What ``spreadbus bus-setup`` does, as the ``setup`` user, with the services' settings
        (feature plugins, lease TTL, snapshot bucket, HISTORY limits from ``service_env``): on
        the hub (copying ``members``' streams), or on ``member``'s own leaf server."""
        assert self.nats is not None
        env = {f"{ENV_PREFIX}NATS_REPLICAS": str(self.nats_servers), **os.environ,
               **self.service_env, f"{ENV_PREFIX}NATS_URL": ",".join(urls),
               f"{ENV_PREFIX}SHARDS": str(self.planner_shards)}
        if member:
            env[f"{ENV_PREFIX}MEMBER"] = member
        if members:
            env[f"{ENV_PREFIX}MEMBERS"] = ",".join(members)
        if self.secured_bus:
            env[f"{ENV_PREFIX}NATS_NKEY_SEED"] = str(seed_file(self.credentials_dir, SETUP))
            env[f"{ENV_PREFIX}NATS_TLS_CA"] = str(local_ca(self.data_dir))
        settings = load_settings(BusSetupSettings, env=env)
        if isinstance(settings, list):
            raise StackError("bus setup: " + "; ".join(str(e) for e in settings))
        try:
            asyncio.run(set_up(settings, layout_of(settings)))
        except (SetupFailed, PluginError, ValueError) as exc:
            raise StackError(f"bus setup{' of ' + member if member else ''}: {exc}") from exc

    def _development_ca(self) -> CertKeyPair:
        """The CA of the stack's certificates, made once under ``DIR/tls`` and kept."""
        directory = self.data_dir / "tls"
        ca_cert, ca_key = directory / "ca.crt", directory / "ca.key"
        if ca_cert.exists() and ca_key.exists():
            return CertKeyPair(ca_cert.read_bytes(), ca_key.read_bytes(), "ca")
        ca = make_ca("spreadbus development CA")
        ca.write(directory, "ca")
        return ca

    def _certificates(self) -> dict[str, Path]:
        """From the development CA, a fresh serving certificate for the webhook and a fresh
        client certificate kubesim authenticates to the webhook with (the webhook trusts the
        CA's client certificates only, which a caller without the CA's key cannot get)."""
        hosts = [SERVICE_DNS, "127.0.0.1", "localhost"]
        ca = self._development_ca()
        server = issue_server_cert(ca, hosts).write(self.data_dir / "tls", "webhook")
        client = issue_client_cert(ca, API_SERVER_IDENTITY).write(self.data_dir / "tls",
                                                                  "apiserver-client")
        return {"ca": local_ca(self.data_dir), "cert": server.cert, "key": server.key,
                "client_cert": client.cert, "client_key": client.key}

    def _reported(self, child: Child, message: str, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while not (port := child.reported_port(message)):
            if not child.running:
                raise StackError(f"{child.name} exited:\n{child.log_tail()}")
            if time.monotonic() > deadline:
                raise StackError(f"{child.name} reported no port:\n{child.log_tail()}")
            time.sleep(0.1)
        return port

    def _start_kubesim(self, tls: dict[str, Path]) -> None:
        self.kubeconfig = self.run_dir / "kubeconfig"
        control_plane = ["--control-plane"] if self.members else []
        self.kubesim = self._kubesim_child("kubesim", self.kubeconfig, self.kubesim_state,
                                           [*control_plane, *self.kubesim_args], tls)

    def _kubesim_child(self, name: str, kubeconfig: Path, state: Path, args: list[str],
                       tls: dict[str, Path]) -> Child:
        """A kubesim started, once it has written its kubeconfig (naming the port it bound)."""
        kubeconfig.unlink(missing_ok=True)
        state.parent.mkdir(parents=True, exist_ok=True)
        argv = [
            sys.executable,
            "-m",
            "kubesim",
            "--port",
            "0",  # kubesim binds a free port and names it in the kubeconfig it writes
            "--kubeconfig",
            str(kubeconfig),
            f"--webhook-client-cert={tls['client_cert']}",
            f"--webhook-client-key={tls['client_key']}",
            "--webhook-client-cert-for-conversions",
            f"--state={state}",
            *args,
        ]
        kubesim = Child(name, argv, self.data_dir / "logs" / f"{name}.log")
        kubesim.start()
        deadline = time.monotonic() + 60
        while not kubeconfig.exists():
            if not kubesim.running:
                raise StackError(f"{name} exited:\n{kubesim.log_tail()}")
            if time.monotonic() > deadline:
                raise StackError(f"{name} wrote no kubeconfig:\n{kubesim.log_tail()}")
            time.sleep(0.1)
        return kubesim

    def _service(self, name: str, tls: dict[str, Path],
                 member: MemberCluster | None = None) -> Child:
        """The host's service ``name``, or ``member``'s: connected to the member's leaf server
        as the member's user, watching the member's kubesim, its log under ``logs/<member>``."""
        assert self.nats is not None
        module = next((m for m in (WEBHOOK, PLANNER) if name.startswith(m)), name)
        urls, cluster, user, kubeconfig = self.nats_urls, self.cluster, module, self.kubeconfig
        label = name
        if member is not None:
            assert member.server is not None
            urls, cluster, kubeconfig = [member.server.url], member.name, member.kubeconfig
            user, label = member_user(member.name, module), f"{member.name}/{name}"
        argv = [
            sys.executable,
            "-m",
            f"services.{module}",
            f"--nats-url={','.join(urls)}",
            f"--cluster={cluster}",
            "--http-host=127.0.0.1",
            HEALTH_PORT_ZERO,
        ]
        if self.secured_bus:
            argv += [f"--nats-nkey-seed={seed_file(self.credentials_dir, user)}",
                     f"--nats-tls-ca={local_ca(self.data_dir)}"]
        if member is not None:
            argv.append(f"--nats-user={user}")
        if name in ("watcher", "actuator"):
            argv.append(f"--kubeconfig={kubeconfig}")
        if member is not None and name == "watcher":
            argv.append(f"--host-kubeconfig={self.kubeconfig}")  # registers the member's Cluster
        if member is not None and name == "actuator":
            # Reads the governors that live in the host (a copy's binding, a subset workload's
            # UnitedDeployment), which plans name by the host's --cluster.
            argv += [f"--host-kubeconfig={self.kubeconfig}", f"--host-cluster={self.cluster}"]
        if member is None and self.members and module in (PLANNER, WEBHOOK):
            argv.append("--uniteddeployment-control-plane=true")  # the host runs no workloads
        if self.members and name == "watcher":
            # The host's and every member's (kubesim authorizes every request: the members'
            # actuators may write ClusterRoles as the propagate-clusterroles component allows).
            argv += ["--propagate-configmaps=true", "--propagate-clusterroles=true"]
        if module == PLANNER and self.planner_shards > 1:
            argv += [f"--shards={self.planner_shards}",
                     f"--shard={planner_names(self.planner_shards).index(name)}"]
        if module == WEBHOOK:
            argv += [
                "--host=127.0.0.1",
                f"--port={PORT_ZERO}",
                f"--tls-cert={tls['cert']}",
                f"--tls-key={tls['key']}",
                f"--client-ca={tls['ca']}",
                f"--conversion-port={PORT_ZERO}",
            ]
        return Child(label, argv, self.data_dir / "logs" / f"{label}.log", env=self.service_env)

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            self.supervise()
            waiting = [c.name for c in self.every_service if not c.ready()]
            if not waiting:
                return
            if time.monotonic() > deadline:
                tails = "\n".join(f"--- {n}:\n{self._child(n).log_tail()}" for n in waiting)
                raise StackError(f"not ready after {timeout:.0f}s: {', '.join(waiting)}\n{tails}")
            time.sleep(0.2)

    def _child(self, name: str) -> Child:
        return next(c for c in self.every_service if c.name == name)

    # -- running ------------------------------------------------------------------------------

    def supervise(self) -> None:
        """Restart nats-server and services that exited, with a growing delay that starts over
        once a child has stayed up a while; kubesim dying is fatal."""
        for kubesim in (self.kubesim, *(m.kubesim for m in self.member_clusters)):
            if kubesim is not None and not kubesim.running:
                raise StackError(f"{kubesim.name} exited:\n{kubesim.log_tail()}")
        now = time.monotonic()
        self._supervise_nats(now)
        for member in self.member_clusters:
            if member.server is not None:
                self._supervise_one_nats(member.server, member.backoff, now)
        for child in self.every_service:
            if child.running:
                child.backoff.running(now)
                continue
            delay = child.backoff.exited(now)
            if delay is not None:
                say(
                    f"{child.name} exited (code {child.process and child.process.returncode}), "
                    f"restarting in {delay:.1f}s; log: {child.log_path}"
                )
            elif child.backoff.due(now):
                child.start()
                say(f"{child.name} restarted (restart {child.backoff.restarts})")
        self._sync_endpoints()
        for member in self.member_clusters:
            self._sync_member_endpoints(member)

    def _supervise_nats(self, now: float) -> None:
        for nats, backoff in zip(self.nats_members, self.nats_backoffs, strict=True):
            self._supervise_one_nats(nats, backoff, now)

    def _supervise_one_nats(self, nats: NatsServer, backoff: Backoff, now: float) -> None:
        """A nats-server is restarted like a service, on the port and store it had."""
        if nats.running:
            backoff.running(now)
            return
        delay = backoff.exited(now)
        if delay is not None:
            say(f"nats-server exited, restarting in {delay:.1f}s on {nats.url}; the services "
                "reconnect to it")
        elif backoff.due(now):
            try:
                nats.restart()
            except Exception as exc:  # the port may still be held; the next round tries again
                say(f"nats-server did not restart yet: {exc}")
                backoff.next_start = now + FIRST_DELAY_SECONDS
                return
            backoff.started(time.monotonic())
            say(f"nats-server restarted on {nats.url} (restart {backoff.restarts})")

    def _sync_endpoints(self) -> None:
        """List each webhook replica as a ready endpoint only while it answers ``/readyz``."""
        if not self.endpoints_ready:
            return
        webhooks = [c for c in self.services if c.name.startswith(WEBHOOK)]
        ready = tuple(c.ready() for c in webhooks)
        if ready == self.endpoints_ready:
            return
        try:
            write_endpoints(self.kubeconfig, self.webhook_ports, ready, self.conversion_ports)
        except Exception as exc:  # the API may be busy; the next round tries again
            say(f"webhook endpoints not updated: {exc}")
            return
        self.endpoints_ready = ready

    def _sync_member_endpoints(self, member: MemberCluster) -> None:
        """As :meth:`_sync_endpoints`, for the member's webhook in the member's kubesim."""
        if not member.endpoints_ready:
            return
        ready = tuple(c.ready() for c in member.services if c.name.endswith(WEBHOOK))
        if ready == member.endpoints_ready:
            return
        try:
            write_endpoints(member.kubeconfig, member.webhook_ports, ready,
                            member.conversion_ports)
        except Exception as exc:  # the API may be busy; the next round tries again
            say(f"{member.name}'s webhook endpoints not updated: {exc}")
            return
        member.endpoints_ready = ready

    def status_lines(self) -> Iterator[str]:
        for child in self.every_service:
            state = "ready" if child.ready() else ("running" if child.running else "stopped")
            yield f"  {child.name:<{self._name_width()}} {state:<8} health http://127.0.0.1:{child.health_port}"

    def _name_width(self) -> int:
        return max(9, *(len(c.name) for c in self.every_service))

    # -- shutdown -----------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop everything that was started; safe to call twice and at any point of start-up.

        Each step runs even if an earlier one failed, so one stubborn child never leaves the
        others running. A stack that never got the data directory's lock started nothing, and
        the files there are another stack's: it leaves them alone.
        """
        if self._lock is None or not self._lock.held:
            return
        for stale in ("kubeconfig", "nats-url"):
            with contextlib.suppress(OSError):
                (self.data_dir / stale).unlink()
        deadline = time.monotonic() + GRACE_SECONDS
        try:
            for child in self.every_service:
                with contextlib.suppress(OSError):
                    child.terminate()
            for child in self.every_service:
                child.wait_or_kill(deadline)
        finally:
            try:
                kubesims = [k for k in (self.kubesim, *(m.kubesim for m in self.member_clusters))
                            if k is not None]
                for kubesim in kubesims:
                    kubesim.terminate()
                for kubesim in kubesims:
                    kubesim.wait_or_kill(time.monotonic() + GRACE_SECONDS)
            finally:
                try:
                    servers = [m.server for m in self.member_clusters if m.server is not None]
                    for nats in [*servers, *self.nats_members]:
                        with contextlib.suppress(Exception):
                            nats.stop()
                finally:
                    self._lock.release()

    def __enter__(self) -> Stack:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def bus_options(data_dir: Path, user: str = READER) -> dict[str, Any]:
    """How a client connects to the NATS of the stack in ``data_dir`` as ``user``
    (``nats.connect`` keywords: the user's nkey seed and inbox, TLS trusting the stack's CA)."""
    return {"nkeys_seed": str(local_seed(data_dir, user)),
            "inbox_prefix": inbox_prefix(user),
            "tls": ssl.create_default_context(cafile=str(local_ca(data_dir)))}


def kept_bus_servers(bus: Path) -> int:
    """How many nats-servers the bus kept in ``bus`` was run with: 0 when none was kept yet, 1
    for a single server's store (``bus/jetstream``), else the cluster members' stores."""
    if (bus / "jetstream").is_dir():
        return 1
    return sum(1 for d in bus.glob("nats-*/jetstream") if d.is_dir())


def publish(path: Path, text: str) -> None:
    """Write by rename, so a reader never sees half a file."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    os.replace(partial, path)


def say(message: str) -> None:
    print(f"spreadbus up: {message}", file=sys.stderr, flush=True)
