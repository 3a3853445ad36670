"""``spreadbus bus-users --out DIR``: the bus users of a cluster installation.

Writes one nkey seed per user (``DIR/<user>.nk``; an existing one is kept, so running it again
after an upgrade only refreshes the permissions) and ``DIR/users.conf``, the nats-server
``authorization`` block with every user's public key and permissions for the features the
services run (``--feature-plugins`` as the services are given it) and the clusters their
actuators act on (``--cluster``), and the planner shards' stream (``--shards`` as the planners
are given it). The ``setup`` user's seed is the one credential that
configures streams and buckets (``spreadbus bus-setup``, deploy/'s ``spreadbus-bus-setup`` Job).
Then prints the ``kubectl`` commands that store them as the Secrets ``deploy/`` mounts.

``--member NAME`` (repeat for several) adds a member cluster's agent users,
``NAME-watcher``, ``NAME-actuator`` and ``NAME-webhook``, allowed only that member's subjects,
keys and plans (:mod:`spreadbus.runtime.member_permissions`); the hub's users are denied the
member's plan consumer. It also adds the member's leaf-link user, ``NAME-leaf``, with a password
of its own (``DIR/NAME-leaf.password``) that the member's leaf server dials the hub with,
allowed only leaf connections and the member's part of the link
(:func:`spreadbus.runtime.member_bus.leaf_permissions`). For each member it prints the Secrets
to create in the member's cluster, under the names ``deploy/components/member-agent`` mounts:
the member's seeds as its services', its leaf link's URL with the password, the hub's CA and
the host's kubeconfig.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from events.shards import check_count
from kubesemantics.qualified_names import is_dns1123_label
from spreadbus.engine.feature_set import bus_accesses
from spreadbus.features.registry import PluginError, features
from spreadbus.runtime.bus_permissions import DEFAULT_CLUSTERS, SERVICES, SETUP, server_users
from spreadbus.runtime.bus_users import ensure_users, seed_file
from spreadbus.runtime.member_bus import (
    ensure_leaf_password,
    leaf_authorization_users,
    leaf_password_file,
    leaf_user,
)
from spreadbus.runtime.member_permissions import member_server_users, member_users

NAMESPACE = "spreadbus"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, required=True, help="directory for the files")
    parser.add_argument("--feature-plugins", default="",
                        help="module:attribute,... as the services are given it")
    parser.add_argument("--snapshot-bucket", default="spreadbus-snapshots",
                        help="the planner's --snapshot-bucket")
    parser.add_argument("--cluster", action="append", default=[],
                        help="a cluster the actuators act on (their --cluster; repeat for "
                        "several; default: default, as deploy/config.yaml sets it): only its "
                        "actuator may use its plan consumer")
    parser.add_argument("--shards", type=int, default=1,
                        help="the planners' --shards: with more than one, the planner reads "
                        "the namespace-partitioned copy of KUBE instead of KUBE")
    parser.add_argument("--member", action="append", default=[], metavar="NAME",
                        help="a member cluster (repeat for several): write its agent's users, "
                        "each allowed only the member's own subjects and plans")


def run(args: argparse.Namespace) -> int:
    try:
        chosen = features([p for p in args.feature_plugins.split(",") if p])
    except PluginError as exc:
        print(f"--feature-plugins: {exc}")
        return 2
    try:
        check_count(args.shards)
    except ValueError as exc:
        print(f"--shards: {exc}")
        return 2
    members: list[str] = list(dict.fromkeys(args.member))
    hub_clusters = args.cluster or list(DEFAULT_CLUSTERS)
    for member in members:
        problems = is_dns1123_label(member)
        if problems or member in hub_clusters:
            print(f"--member {member!r}: " + ("; ".join(problems) if problems else
                                             "is a cluster of the hub's own actuators"))
            return 2
    out: Path = args.out
    keys = ensure_users(out)
    accesses = bus_accesses(chosen)
    member_entries = []
    for member in members:
        member_keys = ensure_users(out, member_users(member))
        member_entries += member_server_users(member_keys, member, accesses,
                                              clusters=[*hub_clusters, *members])
        member_entries += leaf_authorization_users({member: ensure_leaf_password(out, member)})
    users = out / "users.conf"
    users.write_text(server_users(keys, accesses, snapshot_bucket=args.snapshot_bucket,
                                  clusters=hub_clusters, shards=args.shards,
                                  members=members, extra_users=member_entries))
    print(f"wrote {users} and a seed per user in {out}; store them with:")
    print(f"  kubectl -n {NAMESPACE} create secret generic spreadbus-nats-users "
          f"--from-file=users.conf={users}")
    for service in (*SERVICES, SETUP):
        print(f"  kubectl -n {NAMESPACE} create secret generic spreadbus-bus-{service} "
              f"--from-file=seed={seed_file(out, service)}")
    for member in members:
        print(f"in cluster {member} (deploy/components/member-agent), HUB the address of the "
              "hub's leaf port:")
        print(f"  kubectl -n {NAMESPACE} create secret generic spreadbus-nats-users "
              f"--from-file=users.conf={users}")
        for user, service in member_users(member).items():
            print(f"  kubectl -n {NAMESPACE} create secret generic spreadbus-bus-{service} "
                  f"--from-file=seed={seed_file(out, user)}")
        print(f"  kubectl -n {NAMESPACE} create secret generic spreadbus-bus-{SETUP} "
              f"--from-file=seed={seed_file(out, SETUP)}")
        print(f"  kubectl -n {NAMESPACE} create secret generic spreadbus-leaf --from-literal="
              f"url=nats-leaf://{leaf_user(member)}:$(cat {leaf_password_file(out, member)})"
              "@HUB:7422")
        print(f"  kubectl -n {NAMESPACE} create secret generic spreadbus-hub-ca "
              "--from-file=ca.crt=<the CA of the hub's NATS certificate>")
        print(f"  kubectl -n {NAMESPACE} create secret generic spreadbus-host-kubeconfig "
              "--from-file=kubeconfig=<the host's API server, allowed to create "
              "clusters.cluster.karmada.io>")
        print(f"  kubectl -n {NAMESPACE} create secret generic spreadbus-actuator-host-kubeconfig "
              "--from-file=kubeconfig=<the host's API server, allowed to get "
              "resourcebindings.work.karmada.io>")
    print(f"the read-only user for subscribers: {seed_file(out, 'reader')}")
    return 0
