"""The local stack for WorkloadSpread scenarios: real nats-server, kubesim, the four services.

``spreadbus up``'s :class:`Stack` starts every part as its own process; kubesim runs with fast
kubelet delays so a scenario of a few hundred pods takes seconds. Service settings are passed
the documented way, as ``SPREADBUS_*`` variables in the service processes' environment (this
process's own is left alone); the actuator's API rate limit is raised (its default of 20
requests/s suits a shared production API server, not a simulator that a scenario writes a few
hundred deletion costs to).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from spreadbus.cli.local_stack import Stack
from spreadbus.features.workloadspread.core.model import (
    DELETION_COST_ANNOTATION,
    MATCHED_ANNOTATION,
)

T = TypeVar("T")
MATCHED = MATCHED_ANNOTATION
DELETION_COST = DELETION_COST_ANNOTATION
FAST_KUBELET = [
    "--create-delay=0.02",
    "--start-delay=0.02",
    "--ready-delay=0.02",
    "--max-termination-grace=0.2",
    "--unschedulable-retry=0.5",
    "--no-events",
]
FAST_ACTUATOR = {"SPREADBUS_KUBE_QPS": "1000", "SPREADBUS_KUBE_BURST": "1000"}


@contextmanager
def local_stack(
    data_dir: Path, topology: str, env: Mapping[str, str]
) -> Iterator[client.ApiClient]:
    with running_stack(data_dir, topology, env) as (_, api):
        yield api


@contextmanager
def running_stack(
    data_dir: Path, topology: str, env: Mapping[str, str], *, webhook_replicas: int = 1,
    kubelet: Sequence[str] = (), refusals: bool = False, nats_servers: int = 1,
    planner_shards: int = 1,
) -> Iterator[tuple[Stack, client.ApiClient]]:
    """The stack itself too, for scenarios that read its processes (ports, metrics);
    ``kubelet``: kubesim flags that replace the fast kubelet delays (a later flag wins);
    ``refusals``: the scenario forges what the actuator must refuse, so refused plans are no
    failure; ``nats_servers``: 3 for a JetStream cluster; ``planner_shards``: planner shard
    groups instead of one planner."""
    stack = Stack(data_dir=data_dir, cluster="local",
                  kubesim_args=[f"--topology={topology}", *FAST_KUBELET, *kubelet],
                  webhook_replicas=webhook_replicas, service_env={**FAST_ACTUATOR, **env},
                  nats_servers=nats_servers, planner_shards=planner_shards)
    try:
        stack.start(120.0)
        api: client.ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(data_dir / "kubeconfig")
        )
        with api:
            yield stack, api
        assert stack.nats is not None
        refused = [line for server in stack.nats_members
                   for line in server.log.decode(errors="replace").splitlines()
                   if "Violation" in line]
        assert not refused, "the bus refused a service:\n" + "\n".join(refused[:20])
        forbidden = forbidden_plans(stack)
        assert refusals or not forbidden, (
            "the actuator refused plans:\n" + "\n".join(forbidden[:20]))
    finally:
        stack.stop()


def forbidden_plans(stack: Stack) -> list[str]:
    """Every plan an actuator refused as beyond its rule's grants: the log lines of every run
    (a restarted actuator's count starts again) and the running ones' nonzero counters."""
    found: list[str] = []
    for child in stack.services:
        if not child.name.startswith("actuator"):
            continue
        if child.log_path.exists():
            found += [line for line in child.log_path.read_text(errors="replace").splitlines()
                      if "plan refused" in line]
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{child.health_port}/metrics",
                                        timeout=2) as response:
                text = response.read().decode()
        except (urllib.error.URLError, OSError):
            continue
        found += [line for line in text.splitlines()
                  if line.startswith("spreadbus_actuator_forbidden_plans_total{")
                  and float(line.rsplit(" ", 1)[1]) != 0.0]
    return found


KUBECTL = str(Path(sys.executable).with_name("kubectl"))


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    """kubectl's output; a failure fails the test with kubectl's own message."""
    done = subprocess.run(
        [KUBECTL, f"--kubeconfig={kubeconfig}", *args],
        input=stdin, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr or done.stdout}"
    return done.stdout


def wait_for(what: str, check: Callable[[], T | None], timeout: float,
             show: Callable[[], object] | None = None) -> T:
    """Poll ``check`` until it returns something true; ``show`` tells the state on a timeout."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        last = check()
        if last:
            return last  # type: ignore[no-any-return]
        if time.monotonic() > deadline:
            state = f"; last seen: {show()}" if show is not None else ""
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}{state}")
        time.sleep(0.2)


def create_namespace(api: client.ApiClient, name: str) -> None:
    try:
        client.CoreV1Api(api).create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name=name))
        )
    except ApiException as exc:
        if exc.status != 409:
            raise


def zone_term(zone: str) -> dict[str, Any]:
    return {"matchExpressions": [
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}
    ]}


VIRTUAL_NODE_TOLERATIONS: list[dict[str, Any]] = [
    {"key": "virtual-kubelet.io/provider", "operator": "Exists", "effect": "NoSchedule"}
]
"""What a subset placed on the elastic topology's virtual nodes must tolerate."""


def spread(name: str, target: str, subsets: list[dict[str, Any]],
           strategy: dict[str, Any] | None = None) -> dict[str, Any]:
    """A WorkloadSpread over the Deployment ``target``."""
    spec: dict[str, Any] = {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
        "subsets": subsets,
    }
    if strategy is not None:
        spec["scheduleStrategy"] = strategy
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
            "metadata": {"name": name}, "spec": spec}


def zone_subset(name: str, zone: str, max_replicas: int | None = None) -> dict[str, Any]:
    """A subset pinned to ``zone`` that labels its pods ``deploy/zone=<zone>``."""
    out: dict[str, Any] = {"name": name, "requiredNodeSelectorTerm": zone_term(zone),
                           "patch": {"metadata": {"labels": {"deploy/zone": zone}}}}
    if max_replicas is not None:
        out["maxReplicas"] = max_replicas
    return out


def elastic_spread(name: str, target: str, fixed: int) -> dict[str, Any]:
    """The seed's elastic shape: a fixed pool ``ACK`` of at most ``fixed`` pods in zone ack, the
    rest in the unlimited ``ECI`` of virtual nodes in zone eci."""
    return spread(name, target, [
        zone_subset("ACK", "ack", fixed),
        {**zone_subset("ECI", "eci"), "tolerations": VIRTUAL_NODE_TOLERATIONS},
    ])


def create_spread(api: client.ApiClient, namespace: str, body: dict[str, Any]) -> None:
    """Create the WorkloadSpread ``body``, and its namespace if it does not exist yet."""
    create_namespace(api, namespace)
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "apps.kruise.io", "v1alpha1", namespace, "workloadspreads", body
    )


def deployment(name: str, replicas: int, *, cpu: str = "10m") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{
                    "name": "app", "image": "nginx:1",
                    "resources": {"requests": {"cpu": cpu, "memory": "16Mi"}},
                }]},
            },
        },
    }


def subset_of(pod: Any) -> str:
    raw = (pod.metadata.annotations or {}).get(MATCHED)
    if raw is None:
        return "(none)"
    return str(json.loads(raw).get("subset") or "(none)")


def live_pods(api: client.ApiClient, namespace: str, app: str) -> list[Any]:
    core: Any = client.CoreV1Api(api)
    pods = core.list_namespaced_pod(namespace, label_selector=f"app={app}").items
    return [p for p in pods if p.metadata.deletion_timestamp is None
            and p.status.phase not in ("Succeeded", "Failed")]


def split(pods: list[Any], *, running: bool = False) -> Counter[str]:
    return Counter(subset_of(p) for p in pods if not running or p.status.phase == "Running")


def node_zones(api: client.ApiClient) -> dict[str, str]:
    core: Any = client.CoreV1Api(api)
    nodes = core.list_node().items
    return {n.metadata.name: (n.metadata.labels or {}).get("topology.kubernetes.io/zone", "")
            for n in nodes}


def spread_status(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    custom: Any = client.CustomObjectsApi(api)
    obj = custom.get_namespaced_custom_object(
        "apps.kruise.io", "v1alpha1", namespace, "workloadspreads", name
    )
    status: dict[str, Any] = obj.get("status") or {}
    return status


def subset_field(status: Mapping[str, Any], field: str) -> dict[str, Any]:
    return {s["name"]: s.get(field) for s in status.get("subsetStatuses") or []}
