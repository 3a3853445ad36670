"""The bus of a member cluster: a leaf nats-server that dials out to the hub, in a JetStream
domain of its own, and the streams that carry each side's messages across the leaf link.

A member needs no inbound reachability: its leaf server dials the hub's ``leafnodes`` port as the
member's leaf user (:func:`leaf_user`), whose permissions on the hub are exactly the member's
part of the link (:func:`leaf_permissions`). Its JetStream is the domain ``<member>``; the hub's
is :data:`HUB_DOMAIN`. A domain's ``$JS.API`` stays inside it; the other side reaches it as
``$JS.<domain>.API``, which is how stream sourcing crosses the link.

The streams (:func:`member_streams`, :func:`hub_streams`):

- in the member's domain, ``KUBE`` and ``OUTCOMES`` capture what the member's watcher and
  actuator publish (``kube.obs.<member>.>``, ``kube.sync.<member>.>``, ``outcome.<member>.>``),
  with the hub's limits and dedup windows; ``PLANS`` captures nothing and sources the hub's
  ``PLANS`` filtered to ``plan.<member>.>``. The names are the hub's, so the member's services
  (and their permissions, :mod:`spreadbus.runtime.member_permissions`) work unchanged against
  their own leaf server;
- on the hub, ``KUBE`` and ``OUTCOMES`` source each member's stream of that name from its domain.

So the messages of a member are stored in its own domain first, whatever the link does, and the
server copies them across once it can: sourcing resumes after the last message it copied, so the
hub gets every message, in the member's order, once. A plan reaches the member the same way and
is applied once because the member's actuator consumes its local ``PLANS`` through its durable
consumer with explicit acks, as on the hub: a plan already acked is never delivered again,
however often the link drops.

``spreadbus bus-setup --member NAME`` against the member's leaf server creates the member's
streams; ``spreadbus bus-setup --members a,b`` on the hub adds their sources to the hub's
streams. ``spreadbus bus-users --member NAME`` writes the leaf user and its password.
The leaf link must not carry the member's subjects themselves, or a hub stream would capture
each message once directly and once by sourcing: the leaf user may publish across the link
only what sourcing needs (:func:`leaf_permissions`).

Signatures::

    HubLeafListen(listen: str, tls_cert: Path | None = None, tls_key: Path | None = None,
                  advertise: bool = False)
    LeafRemote(url: str, user: str, password: str, tls_ca: Path | None = None)
    hub_server_config(listen: str, members: Mapping[str, str], *, base: ServerConfig = PLAIN,
                      users: Sequence[Mapping[str, Any]] = ()) -> ServerConfig
    member_server_config(member: str, hub_leaf_url: str, password: str, *,
                         base: ServerConfig = PLAIN, hub_ca: Path | None = None
                         ) -> ServerConfig
    start_hub(store_dir: Path, config_dir: Path, members: Mapping[str, str], *,
              base: ServerConfig = PLAIN, users: Sequence[Mapping[str, Any]] = (),
              monitor: bool = False, host: str = "127.0.0.1") -> HubServer  # .leaf_url
    start_member_server(store_dir: Path, config_dir: Path, member: str, hub_leaf_url: str,
                        password: str, *, base: ServerConfig = PLAIN,
                        hub_ca: Path | None = None, monitor: bool = False,
                        host: str = "127.0.0.1") -> NatsServer
    leaf_authorization_users(members: Mapping[str, str]) -> list[dict[str, Any]]
    ensure_leaf_password(directory: Path, member: str) -> str
    member_streams(member: str) -> tuple[StreamSpec, ...]
    bucket_sources(bucket: str, members: Sequence[str]) -> tuple[DomainSource, ...]
    hub_streams(members: Sequence[str], specs: Sequence[StreamSpec] = events.streams.ALL
                ) -> tuple[StreamSpec, ...]

``members`` maps each member to its leaf password.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

import msgspec

from events import streams, subjects
from events.buckets import kv_token
from events.streams import DomainSource, StreamSpec
from spreadbus.runtime.member_permissions import scoped
from spreadbus.runtime.nats_server import NatsServer, ServerConfig, free_port
from tlsserving.secret_files import write_secret

HUB_DOMAIN: Final = "hub"
PLAIN: Final = ServerConfig()
"""A configuration with nothing besides what these functions add."""
_REPLIES: Final = "$JSC.R"
"""Where a server's own JetStream requests across the link (a source's consumer) are answered."""
SOURCED_FROM_MEMBERS: Final = (streams.KUBE.name, streams.OUTCOMES.name, streams.ADMISSIONS.name,
                                streams.HISTORY.name)
"""The hub's streams that copy each member's stream of the same name."""


def leaf_user(member: str) -> str:
    return f"{member}-leaf"


def domain(member: str) -> str:
    """The member's JetStream domain: its name, one subject token."""
    token = subjects.escape(member)
    if token == HUB_DOMAIN:
        raise ValueError(f"member: {member!r} is the hub's domain; name the member otherwise")
    return token


def delivery_prefix(member: str) -> str:
    """The subjects the copies to and from the member's domain cross the link on."""
    return f"$JS.S.{domain(member)}"


def jetstream_domain_block(name: str) -> str:
    return f"jetstream {{\n  domain: {json.dumps(name)}\n}}\n"


@dataclass(frozen=True)
class HubLeafListen:
    """The hub's ``leafnodes`` block: the port the members' leaf servers dial.

    The leaf users are not listed here (a ``leafnodes`` user can carry no permissions): they are
    users of the server's ``authorization`` (:func:`leaf_authorization_users`), which a leaf
    connection authenticates against when its own block names none.
    """

    listen: str
    tls_cert: Path | None = None
    tls_key: Path | None = None
    """The hub's certificate on the leaf port; with it, the port takes TLS links only."""
    advertise: bool = False
    """Whether the hub tells the leaf servers its own leaf addresses, which they would dial on
    a reconnect instead of the URL they were given; off, so a member keeps dialing the address
    its operator configured (a load balancer, a tunnel, a proxy)."""

    def block(self) -> str:
        lines = [f"  listen: {json.dumps(self.listen)}"]
        if self.tls_cert is not None and self.tls_key is not None:
            lines.append(f"  tls {{ cert_file: {json.dumps(str(self.tls_cert))}, "
                         f"key_file: {json.dumps(str(self.tls_key))} }}")
        if not self.advertise:
            lines.append("  no_advertise: true")
        return "leafnodes {\n" + "\n".join(lines) + "\n}\n"


@dataclass(frozen=True)
class LeafRemote:
    """A member server's ``leafnodes.remotes`` entry: the hub it dials and who it is there."""

    url: str
    """``nats-leaf://host:port`` of the hub's leaf listen port."""
    user: str
    password: str
    tls_ca: Path | None = None
    """The CA the hub's leaf certificate is checked against; with it, the link is TLS."""

    def block(self) -> str:
        scheme, _, address = self.url.partition("://")
        url = f"{scheme}://{quote(self.user, safe='')}:{quote(self.password, safe='')}@{address}"
        tls = ("" if self.tls_ca is None else
               f", tls: {{ ca_file: {json.dumps(str(self.tls_ca))} }}")
        return f"leafnodes {{\n  remotes: [\n    {{ url: {json.dumps(url)}{tls} }}\n  ]\n}}\n"


def leaf_permissions(member: str) -> dict[str, Any]:
    """What the member's leaf connection may carry, as the hub sees it (publish: from the
    member to the hub; subscribe: from the hub to the member).

    From the member: the creation of its consumer of the hub's ``PLANS``, which names its
    filter (``plan.<member>.>``), so no other filter is accepted; the copies of its streams to
    the hub, on its own delivery prefix (:func:`delivery_prefix`); the replies to the hub's
    requests to its domain API, and flow-control replies for its plans. To the member: the
    hub's requests to the member's domain API, the copies of its plans on its own delivery
    prefix, the replies to its requests, flow control. Its spends on the host's budgets cross
    too, named as its own (``budget.spend.<member>.*``), and only its own answers come back
    (``budget.answer.<member>.>``). Never the member's own subjects
    (``kube.obs.<member>.>`` and the rest): those cross only as copies in its streams, and
    never another member's copies.
    """
    token = domain(member)
    plans = streams.PLANS.name
    deliveries = f"{delivery_prefix(member)}.>"
    return {
        "publish": {"allow": [
            f"$JS.{HUB_DOMAIN}.API.CONSUMER.CREATE.{plans}.*.{subjects.PLANS}.{token}.>",
            deliveries,
            f"{_REPLIES}.*",
            f"$JS.FC.{plans}.>",
            f"{subjects.BUDGET_SPEND}.{token}.*",
        ]},
        "subscribe": {"allow": [
            f"$JS.{token}.API.>",
            deliveries,
            f"{_REPLIES}.*",
            "$JS.FC.>",
            f"{subjects.BUDGET_ANSWER}.{token}.>",
        ]},
    }


def leaf_authorization_users(members: Mapping[str, str]) -> list[dict[str, Any]]:
    """Each member's leaf user (``member -> password``) as an ``authorization.users`` entry;
    it serves a leaf connection only, so a stolen one is no client credential on the hub."""
    return [{"user": leaf_user(member), "password": password,
             "permissions": leaf_permissions(member),
             "allowed_connection_types": ["LEAFNODE"]}
            for member, password in members.items()]


def leaf_password_file(directory: Path, member: str) -> Path:
    return directory / f"{leaf_user(member)}.password"


def ensure_leaf_password(directory: Path, member: str) -> str:
    """The member's leaf password, kept in ``directory`` (mode 0600); a new one when missing,
    so running the user set-up again keeps the link's credential."""
    path = leaf_password_file(directory, member)
    if not path.exists():
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_secret(path, secrets.token_urlsafe(32).encode() + b"\n")
    return path.read_text().strip()


def hub_server_config(listen: str, members: Mapping[str, str], *,
                      base: ServerConfig = PLAIN,
                      users: Sequence[Mapping[str, Any]] = ()) -> ServerConfig:
    """The hub's configuration: ``base``, the hub's domain, the leaf listen port (with
    ``base``'s certificate, when it has one, so the links are TLS as the clients' are), and
    one ``authorization`` with ``users`` (the bus users) and each member's leaf user."""
    everyone = [*users, *leaf_authorization_users(members)]
    authorization = ("authorization {\n  users: " + json.dumps(everyone, indent=2) + "\n}\n"
                     if everyone else "")
    leaf = HubLeafListen(listen, tls_cert=base.tls_cert, tls_key=base.tls_key)
    blocks = (jetstream_domain_block(HUB_DOMAIN), leaf.block(), authorization)
    return replace(base, blocks=(*base.blocks, *(b for b in blocks if b)))


def member_server_config(member: str, hub_leaf_url: str, password: str, *,
                         base: ServerConfig = PLAIN, hub_ca: Path | None = None
                         ) -> ServerConfig:
    """A member's leaf server: ``base``, the member's domain, and the remote it dials (over
    TLS checked against ``hub_ca`` when given)."""
    remote = LeafRemote(hub_leaf_url, leaf_user(member), password, tls_ca=hub_ca)
    return replace(base, server_name=base.server_name or f"{domain(member)}-leaf",
                   blocks=(*base.blocks, jetstream_domain_block(domain(member)),
                           remote.block()))


def member_streams(member: str) -> tuple[StreamSpec, ...]:
    """The streams of the member's domain: its observations, outcomes, admissions and history
    (each narrowed to its own subjects), and its plans. The member's ``HISTORY`` copies none of
    its other streams: the hub's copies them from its own, once each."""
    token = domain(member)
    kube = replace_spec(streams.KUBE, subjects=member_subjects(streams.KUBE, member),
                        description=f"{member}'s observations, copied to the hub's KUBE")
    outcomes = replace_spec(streams.OUTCOMES, subjects=member_subjects(streams.OUTCOMES, member),
                            description=f"{member}'s outcomes, copied to the hub's OUTCOMES")
    admissions = replace_spec(streams.ADMISSIONS,
                              subjects=member_subjects(streams.ADMISSIONS, member),
                              description=f"{member}'s admissions, copied to the hub's")
    history = replace_spec(streams.HISTORY, subjects=member_subjects(streams.HISTORY, member),
                           sources=(), description=f"{member}'s pod and status history, "
                           "copied to the hub's HISTORY")
    plans = replace_spec(streams.PLANS, subjects=(), description=f"The hub's plans for {member}",
                         domain_sources=(DomainSource(
                             name=streams.PLANS.name, domain=HUB_DOMAIN,
                             filter_subjects=(f"{subjects.PLANS}.{token}.>",),
                             deliver=delivery_prefix(member)),))
    return (kube, outcomes, plans, admissions, history)


def bucket_sources(bucket: str, members: Sequence[str]) -> tuple[DomainSource, ...]:
    """What the hub's bucket copies from each member's bucket of that name: the member's own
    keys (every bucket a member's services write is keyed by cluster first), so the planner
    reads a member's heartbeats, reservations and budgets where it reads the host's."""
    return tuple(DomainSource(name=f"KV_{bucket}", domain=domain(m),
                              filter_subjects=(f"$KV.{bucket}.{kv_token(m)}.>",),
                              deliver=delivery_prefix(m)) for m in members)


def member_subjects(spec: StreamSpec, member: str) -> tuple[str, ...]:
    """``spec``'s subjects narrowed to the member: what the hub copies from the member's
    stream of that name, so a member whose stream holds another cluster's subjects (its own
    set-up compromised) cannot pass them on as that cluster's."""
    return tuple(s for subject in spec.subjects for s in scoped(subject, member))


def hub_streams(members: Sequence[str], specs: Sequence[StreamSpec] = streams.ALL
                ) -> tuple[StreamSpec, ...]:
    """``specs`` with the hub's ``KUBE`` and ``OUTCOMES`` sourcing every member's."""
    return tuple(
        replace_spec(spec, domain_sources=(*spec.domain_sources, *(
            DomainSource(name=spec.name, domain=domain(m),
                         filter_subjects=member_subjects(spec, m),
                         deliver=delivery_prefix(m)) for m in members)))
        if spec.name in SOURCED_FROM_MEMBERS else spec
        for spec in specs)


def replace_spec(spec: StreamSpec, **changes: Any) -> StreamSpec:
    return msgspec.structs.replace(spec, **changes)


@dataclass
class HubServer:
    """The hub's nats-server and the port its members' leaf servers dial."""

    server: NatsServer
    leaf_port: int
    host: str = "127.0.0.1"
    members: dict[str, str] = field(default_factory=dict)

    @property
    def leaf_url(self) -> str:
        return f"nats-leaf://{self.host}:{self.leaf_port}"

    def stop(self) -> None:
        self.server.stop()


def start_hub(store_dir: Path, config_dir: Path, members: Mapping[str, str], *,
              base: ServerConfig = PLAIN, users: Sequence[Mapping[str, Any]] = (),
              monitor: bool = False, host: str = "127.0.0.1") -> HubServer:
    """Start the hub's server with the leaf port open to ``members`` (``member -> password``)."""
    leaf_port = free_port(host)
    config = hub_server_config(f"{host}:{leaf_port}", members, base=base, users=users)
    path = config_dir / "hub.conf"
    config_dir.mkdir(parents=True, exist_ok=True)
    write_secret(path, config.render().encode())  # it holds the leaf users' passwords
    server = NatsServer(store_dir=store_dir, host=host, monitor=monitor,
                        extra_args=["-c", str(path)]).start()
    return HubServer(server=server, leaf_port=leaf_port, host=host, members=dict(members))


def start_member_server(store_dir: Path, config_dir: Path, member: str, hub_leaf_url: str,
                        password: str, *, base: ServerConfig = PLAIN,
                        hub_ca: Path | None = None, monitor: bool = False,
                        host: str = "127.0.0.1") -> NatsServer:
    """Start a member's leaf server; it dials ``hub_leaf_url`` and keeps retrying if it must."""
    config = member_server_config(member, hub_leaf_url, password, base=base, hub_ca=hub_ca)
    path = config_dir / f"{domain(member)}-leaf.conf"
    config_dir.mkdir(parents=True, exist_ok=True)
    write_secret(path, config.render().encode())
    return NatsServer(store_dir=store_dir, host=host, monitor=monitor,
                      extra_args=["-c", str(path)]).start()
