"""``spreadbus join NAME``: register a member cluster in the host by hand.

It creates the member's Cluster object in the host's API server, as the member's agent does on
its first connection (``--host-kubeconfig`` of its watcher), for an operator who registers
members before their agents run. The Cluster's status and taints are the control plane's: the
planner sets it Ready once the member's agent beats, Unknown if none comes within the startup
grace period. Exit 0 when the Cluster is there (created now or before), 1 when the host
refused or could not be reached, 2 for a name that cannot be a cluster's.
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="the member cluster's name (its agents' --cluster)")
    parser.add_argument("--kubeconfig", default="",
                        help="kubeconfig of the host's API server (default: in-cluster, else "
                             "~/.kube/config)")
    parser.add_argument("--context", default="",
                        help="context of the kubeconfig (default: its current context)")


def run(args: argparse.Namespace) -> int:
    from kubesemantics.qualified_names import is_dns1123_label
    from spreadbus.clusterregistry.registration import cluster_object, clusters_path
    from spreadbus.runtime.kube_client import Conflict, KubeAPIError, KubeClient, kube_api_client

    name: str = args.name
    problems = is_dns1123_label(name)
    if problems:
        print(f"spreadbus join: name: Invalid value: {name!r}: {'; '.join(problems)}",
              file=sys.stderr)
        return 2
    try:
        api = kube_api_client(args.kubeconfig, args.context)
    except Exception as exc:  # the kubernetes client's config errors share no base class
        print(f"spreadbus join: kubeconfig: {exc}", file=sys.stderr)
        return 1
    try:
        KubeClient(api).request("POST", clusters_path(), body=cluster_object(name))
        print(f"cluster.cluster.karmada.io/{name} created")
    except Conflict:
        print(f"cluster.cluster.karmada.io/{name} unchanged")
    except KubeAPIError as exc:
        print(f"spreadbus join: the host refused cluster {name!r}: {exc}", file=sys.stderr)
        return 1
    finally:
        api.close()  # type: ignore[no-untyped-call]
    return 0
