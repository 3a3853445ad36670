"""A local JetStream cluster of nats-servers on loopback, as the local stack and the tests run it.

Each member is a :class:`~spreadbus.runtime.nats_server.NatsServer` with a store of its own
(``store_root/<name>``), a client port it picks and reports, an HTTP monitoring port likewise,
and a route port chosen free before any member starts, since every member must name all the
others' route ports in its configuration. The routes are authenticated: a process that reaches a
route port without the cluster's password is refused, so a route is no way around the bus
users. A member restarted (after a kill) keeps its ports, its name and its store, and catches up
from the others.

:meth:`NatsCluster.start` returns once every member answers ``/healthz`` (which a clustered
server does only once a JetStream meta leader is elected and its streams are current) and every
stream it holds has a leader, so the bus can be set up or used at once.
:meth:`NatsCluster.current` asks the same later (after a restart: the member has caught up).

Signatures::

    NatsCluster(store_root: Path, config_dir: Path, size: int = 3, name: str = "spreadbus",
                base: ServerConfig = ServerConfig(), password: str = "",
                leaf_listen: bool = False)
        .start(timeout: float = 30.0) -> NatsCluster ; .stop() -> None
        .urls -> list[str] ; .leaf_urls -> list[str] ; .current() -> bool
    member_names(size: int) -> list[str]
"""

from __future__ import annotations

import contextlib
import dataclasses
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from spreadbus.runtime.member_bus import hub_server_config
from spreadbus.runtime.nats_server import (
    ClusterRoutes,
    NatsServer,
    NatsServerError,
    ServerConfig,
    free_port,
)
from tlsserving.secret_files import write_secret

HOST: Final = "127.0.0.1"
ROUTE_USER: Final = "route"


def member_names(size: int) -> list[str]:
    """``nats-1``, ``nats-2``...: the server names, and the names of their store directories."""
    return [f"nats-{i}" for i in range(1, size + 1)]


@dataclass
class NatsCluster:
    store_root: Path
    config_dir: Path
    size: int = 3
    name: str = "spreadbus"
    base: ServerConfig = field(default_factory=ServerConfig)
    """What every member's configuration holds besides its name and routes (TLS, users)."""
    password: str = ""
    """The routes' password; a fresh one when empty."""
    leaf_listen: bool = False
    """Be the hub of member clusters: every member in the JetStream domain ``hub`` with a leaf
    port of its own (:attr:`leaf_urls`), the leaf users among ``base``'s users
    (``spreadbus bus-users --member``)."""
    servers: list[NatsServer] = field(default_factory=list)
    leaf_urls: list[str] = field(default_factory=list)
    """Each member's leaf port, as a member's leaf server dials it."""

    @property
    def urls(self) -> list[str]:
        return [server.url for server in self.servers]

    def configure(self) -> list[NatsServer]:
        """Every member, configured and not started (each starts on its own)."""
        if self.servers:
            return self.servers
        password = self.password or secrets.token_urlsafe(24)
        self.config_dir.mkdir(parents=True, exist_ok=True)
        routes = tuple(f"{HOST}:{free_port()}" for _ in range(self.size))
        for name, listen in zip(member_names(self.size), routes, strict=True):
            config = dataclasses.replace(
                self.base, server_name=name,
                cluster=ClusterRoutes(self.name, listen, routes, ROUTE_USER, password))
            if self.leaf_listen:
                leaf = f"{HOST}:{free_port()}"
                config = hub_server_config(leaf, {}, base=config)
                self.leaf_urls.append(f"nats-leaf://{leaf}")
            path = self.config_dir / f"{name}.conf"
            write_secret(path, config.render().encode())  # it holds the routes' password
            self.servers.append(NatsServer(store_dir=self.store_root / name, monitor=True,
                                           extra_args=["-c", str(path)]))
        return self.servers

    def start(self, timeout: float = 30.0) -> NatsCluster:
        """Start every member and wait until each reports JetStream current."""
        for server in self.configure():
            if not server.running:
                server.start(timeout=timeout)
        deadline = time.monotonic() + timeout
        while not self.current():
            if time.monotonic() > deadline:
                logs = "\n".join(f"--- {s.url}:\n{s.log.decode(errors='replace')[-2000:]}"
                                 for s in self.servers)
                raise NatsServerError(f"no JetStream meta leader after {timeout:.0f}s\n{logs}")
            time.sleep(0.1)
        return self

    def current(self) -> bool:
        """Every member running with a meta leader known, its streams current, and each
        stream led (after a cold start of every member, ``/healthz`` answers before the
        streams have elected their leaders)."""
        if not self.servers or not all(server.healthy() for server in self.servers):
            return False
        for server in self.servers:
            streams = server.streams()
            if streams is None or any(not (s.get("cluster") or {}).get("leader")
                                      for s in streams.values()):
                return False
        return True

    def stop(self) -> None:
        for server in self.servers:
            with contextlib.suppress(Exception):
                server.stop()

    def __enter__(self) -> NatsCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
