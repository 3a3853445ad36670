"""``kubectl get -o wide`` shows upstream's wide columns for nodes and pods, from the objects."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.fixtures.cluster import SimCluster
from tests.kubesim_behaviour.workloads import deployment


def table(text: str) -> list[dict[str, str]]:
    """kubectl's column output as dicts, split on the header's column starts."""
    lines = text.splitlines()
    starts = [m.start() for m in re.finditer(r"\S+(?: \S+)*", lines[0])]
    names = [lines[0][s:].split("  ")[0].strip() for s in starts]
    bounds = [*starts[1:], None]
    return [
        {n: line[s:e].strip() for n, s, e in zip(names, starts, bounds, strict=True)}
        for line in lines[1:]
    ]


def test_get_nodes_wide_shows_addresses_os_kernel_and_runtime(cluster: SimCluster) -> None:
    rows = table(cluster.kubectl("get", "nodes", "-o", "wide").stdout)
    nodes = {n["metadata"]["name"]: n for n in cluster.core.list_node().to_dict()["items"]}
    assert list(rows[0]) == [
        "NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE",
        "KERNEL-VERSION", "CONTAINER-RUNTIME",
    ]
    assert {row["NAME"] for row in rows} == set(nodes)
    for row in rows:
        status = nodes[row["NAME"]]["status"]
        internal = [a["address"] for a in status["addresses"] if a["type"] == "InternalIP"]
        assert row["INTERNAL-IP"] == internal[0]
        assert row["EXTERNAL-IP"] == "<none>"
        assert row["OS-IMAGE"] == status["node_info"]["os_image"]
        assert row["KERNEL-VERSION"] == status["node_info"]["kernel_version"]
        assert row["CONTAINER-RUNTIME"] == status["node_info"]["container_runtime_version"]
    plain = cluster.kubectl("get", "nodes").stdout.splitlines()[0].split()
    assert plain == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]


def test_get_pods_wide_shows_ip_node_and_readiness_gates(cluster: SimCluster) -> None:
    body: dict[str, Any] = deployment("gated", 2)
    body["spec"]["template"]["spec"]["readinessGates"] = [{"conditionType": "example.com/lb"}]
    cluster.kubectl("apply", "-f", "-", stdin=json.dumps(body))
    cluster.wait_for(
        lambda: len([p for p in cluster.pods(selector="app=gated")
                     if (p.get("status") or {}).get("podIP")]) == 2,
        what="pods with addresses",
    )
    rows = table(cluster.kubectl("get", "pods", "-o", "wide", "-l", "app=gated").stdout)
    assert list(rows[0]) == [
        "NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED NODE",
        "READINESS GATES",
    ]
    pods = {p["metadata"]["name"]: p for p in cluster.pods(selector="app=gated")}
    for row in rows:
        pod = pods[row["NAME"]]
        assert row["IP"] == pod["status"]["podIP"]
        assert row["NODE"] == pod["spec"]["nodeName"]
        assert row["NOMINATED NODE"] == "<none>"
        assert row["READINESS GATES"] == "0/1", "the gate's condition is not true yet"
