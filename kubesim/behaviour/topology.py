"""Cluster topologies: groups of identical nodes described in a small YAML file.

A group has a ``name`` (node names are ``<name>-<n>``, n from 1), a ``count``, ``labels``,
``taints``, ``allocatable`` (cpu, memory, pods, any extended resource) and optional
``unschedulable``. Shipped topologies live in ``kubesim/topologies/`` and can be named without
a path (``three-zones``, ``elastic``, ``bench-100``).
"""

from __future__ import annotations

import ipaddress
import zlib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from kubesim.behaviour.quantity import QuantityError, parse_quantity

DEFAULT_TOPOLOGY = "three-zones"
JsonObject = dict[str, Any]


class TopologyError(ValueError):
    """A topology file that cannot describe a cluster; the message names the field."""


@dataclass(frozen=True)
class NodeGroup:
    name: str
    count: int
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[JsonObject, ...] = ()
    allocatable: dict[str, str] = field(default_factory=dict)
    unschedulable: bool = False

    def node_names(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(1, self.count + 1)]


@dataclass(frozen=True)
class Topology:
    name: str
    groups: tuple[NodeGroup, ...]

    def node_names(self) -> list[str]:
        return [n for g in self.groups for n in g.node_names()]

    def nodes(self, now: str) -> list[JsonObject]:
        """Node objects ready to create, Ready as of ``now``, numbered for their addresses."""
        names = [(g, name) for g in self.groups for name in g.node_names()]
        return [node_object(g, name, now, index=i) for i, (g, name) in enumerate(names)]


def shipped_topologies() -> list[str]:
    folder = resources.files("kubesim.topologies")
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


def load_topology(source: str | Path | None = None) -> Topology:
    """A shipped topology by name, or a YAML file by path; the default when None."""
    source = source or DEFAULT_TOPOLOGY
    path = Path(source)
    if not path.exists() and str(source) in shipped_topologies():
        text = (resources.files("kubesim.topologies") / f"{source}.yaml").read_text()
    elif path.exists():
        text = path.read_text()
    else:
        raise TopologyError(
            f"topology {str(source)!r} is neither a file nor one of {shipped_topologies()}"
        )
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise TopologyError(f"topology {source}: not YAML: {exc}") from exc
    return parse_topology(document, default_name=path.stem)


def parse_topology(document: Any, *, default_name: str = "topology") -> Topology:
    if not isinstance(document, dict):
        raise TopologyError("topology: must be a mapping with a 'groups' list")
    raw_groups = document.get("groups")
    if not isinstance(raw_groups, list) or not raw_groups:
        raise TopologyError("groups: must be a non-empty list")
    groups = tuple(_parse_group(g, f"groups[{i}]") for i, g in enumerate(raw_groups))
    names = [n for g in groups for n in g.node_names()]
    if len(set(names)) != len(names):
        raise TopologyError("groups: node names repeat; give each group a distinct name")
    return Topology(str(document.get("name") or default_name), groups)


def _parse_group(raw: Any, path: str) -> NodeGroup:
    if not isinstance(raw, dict):
        raise TopologyError(f"{path}: must be a mapping")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise TopologyError(f"{path}.name: required string")
    count = raw.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise TopologyError(f"{path}.count: must be a non-negative integer")
    labels = raw.get("labels") or {}
    if not isinstance(labels, dict):
        raise TopologyError(f"{path}.labels: must be a mapping")
    taints = raw.get("taints") or []
    if not isinstance(taints, list):
        raise TopologyError(f"{path}.taints: must be a list")
    for j, taint in enumerate(taints):
        if not isinstance(taint, dict) or not taint.get("key"):
            raise TopologyError(f"{path}.taints[{j}].key: required")
        if taint.get("effect") not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise TopologyError(
                f"{path}.taints[{j}].effect: must be NoSchedule, PreferNoSchedule or NoExecute"
            )
    allocatable = raw.get("allocatable") or {}
    if not isinstance(allocatable, dict):
        raise TopologyError(f"{path}.allocatable: must be a mapping")
    for resource, quantity in allocatable.items():
        try:
            parse_quantity(quantity)
        except QuantityError as exc:
            raise TopologyError(f"{path}.allocatable.{resource}: {exc}") from exc
    return NodeGroup(
        name=name,
        count=count,
        labels={str(k): str(v) for k, v in labels.items()},
        taints=tuple(
            {k: str(v) for k, v in t.items() if k in ("key", "value", "effect")} for t in taints
        ),
        allocatable={"cpu": "4", "memory": "16Gi", "pods": "110"}
        | {str(k): str(v) for k, v in allocatable.items()},
        unschedulable=bool(raw.get("unschedulable", False)),
    )


POD_NETWORK = ipaddress.IPv4Network("10.64.0.0/10")
NODE_NETWORK = ipaddress.IPv4Network("10.0.0.0/16")


def node_addresses(index: int) -> tuple[str, str]:
    """(InternalIP, podCIDR) of the ``index``-th node (0..4095): a /22 of pods each."""
    block = POD_NETWORK.network_address + (index % 4096) * 1024
    return str(NODE_NETWORK.network_address + index + 1), f"{block}/22"


def node_object(group: NodeGroup, name: str, now: str, *, index: int | None = None) -> JsonObject:
    """A Ready node of ``group``; ``index`` numbers its addresses (from the name if None)."""
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        **group.labels,
    }
    if index is None:
        index = 1024 + zlib.crc32(name.encode()) % 3072
    internal_ip, pod_cidr = node_addresses(index)
    spec: JsonObject = {"podCIDR": pod_cidr, "podCIDRs": [pod_cidr]}
    if group.taints:
        spec["taints"] = [dict(t) for t in group.taints]
    if group.unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {
            "capacity": dict(group.allocatable),
            "allocatable": dict(group.allocatable),
            "conditions": ready_conditions(True, now),
            "addresses": [
                {"type": "InternalIP", "address": internal_ip},
                {"type": "Hostname", "address": name},
            ],
            "nodeInfo": {
                "architecture": labels["kubernetes.io/arch"],
                "operatingSystem": "linux",
                "kubeletVersion": "v1.37.1",
                "containerRuntimeVersion": "kubesim://1",
                "osImage": "kubesim",
                "kernelVersion": "kubesim",
                "kubeProxyVersion": "",
                "bootID": "",
                "machineID": "",
                "systemUUID": "",
            },
        },
    }


def ready_conditions(ready: bool | None, now: str) -> list[JsonObject]:
    """Node conditions: Ready True/False, or Unknown (None) when the kubelet stopped posting."""
    if ready is None:
        status, reason, message = (
            "Unknown",
            "NodeStatusUnknown",
            "Kubelet stopped posting node status.",
        )
    elif ready:
        status, reason, message = "True", "KubeletReady", "kubelet is posting ready status"
    else:
        status, reason, message = "False", "KubeletNotReady", "container runtime is down"
    pressure = [
        {
            "type": kind,
            "status": "False",
            "reason": f"KubeletHasSufficient{kind.removesuffix('Pressure')}",
            "message": "",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }
        for kind in ("MemoryPressure", "DiskPressure", "PIDPressure")
    ]
    return [
        *pressure,
        {
            "type": "Ready",
            "status": status,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        },
    ]
