"""A stack stopped and started again on the same data directory finds the cluster its bus
describes: kubesim's objects are kept with the bus's history (same uids), so the webhook and
the planner act on objects that exist, and no plan fails NotFound. A directory whose bus was
kept without its cluster is refused before anything starts."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from events.messages import Outcome
from spreadbus.cli.local_stack import Stack
from spreadbus.cli.stack_errors import StackError
from tests.backbone.bus_recording import last_seq, read_stream
from tests.workloadspread_e2e.stack import (
    create_spread,
    deployment,
    elastic_spread,
    live_pods,
    running_stack,
    split,
    spread_status,
    subset_field,
    wait_for,
)

NS = "kept"
FIXED = 2


def uids(api: client.ApiClient) -> dict[str, str]:
    """Each object of the scenario by kind and name, with its uid."""
    custom: Any = client.CustomObjectsApi(api)
    apps: Any = client.AppsV1Api(api)
    spread = custom.get_namespaced_custom_object("apps.kruise.io", "v1alpha1", NS,
                                                 "workloadspreads", "ws")
    found = {"WorkloadSpread/ws": spread["metadata"]["uid"],
             "Deployment/web": apps.read_namespaced_deployment("web", NS).metadata.uid}
    found |= {f"Pod/{p.metadata.name}": p.metadata.uid for p in live_pods(api, NS, "web")}
    return found


def settled(api: client.ApiClient, replicas: int) -> bool:
    """The pods running where the spread puts them, and its status saying so."""
    expected = {"ACK": FIXED, "ECI": replicas - FIXED}
    return (split(live_pods(api, NS, "web"), running=True) == expected
            and subset_field(spread_status(api, NS, "ws"), "replicas") == expected)


def outcomes_after(stack: Stack, seq: int) -> list[Outcome]:
    assert stack.nats is not None
    return [o for s, o in asyncio.run(read_stream(stack.nats.url, "OUTCOMES",
                                                  **stack.bus_options()))
            if s > seq and isinstance(o, Outcome)]


@pytest.mark.e2e
def test_a_stack_started_again_finds_the_cluster_its_bus_describes(tmp_path: Path) -> None:
    data_dir = tmp_path / "stack"
    with running_stack(data_dir, "elastic", {}) as (stack, api):
        create_spread(api, NS, elastic_spread("ws", "web", FIXED))
        apps: Any = client.AppsV1Api(api)
        apps.create_namespaced_deployment(NS, deployment("web", 4))
        wait_for("4 pods, 2 fixed and 2 elastic, in the spread's status",
                 lambda: settled(api, 4), 120, lambda: spread_status(api, NS, "ws"))
        before = uids(api)
    assert stack.kubesim_state.is_file()

    with running_stack(data_dir, "elastic", {}) as (stack, api):
        assert stack.nats is not None
        restarted_at = asyncio.run(last_seq(stack.nats.url, "OUTCOMES", **stack.bus_options()))
        assert uids(api) == before, "the same objects, not new ones of the same names"
        client.AppsV1Api(api).patch_namespaced_deployment("web", NS, {"spec": {"replicas": 5}})
        wait_for("the fifth pod in the elastic subset, and the status saying so",
                 lambda: settled(api, 5), 120, lambda: spread_status(api, NS, "ws"))
        outcomes = outcomes_after(stack, restarted_at)
        spread_uid = before["WorkloadSpread/ws"]
        assert any(o.result == "applied" and o.target.uid == spread_uid for o in outcomes), (
            "the planner wrote the kept spread's status")
        missing = [o for o in outcomes if o.error is not None and o.error.status == 404]
        assert missing == [], "a plan acted on an object the cluster does not have"


def test_a_bus_kept_without_its_cluster_is_refused(tmp_path: Path) -> None:
    data_dir = tmp_path / "stack"
    (data_dir / "nats" / "jetstream" / "$G" / "streams" / "KUBE").mkdir(parents=True)
    stack = Stack(data_dir=data_dir, cluster="local", kubesim_args=[])
    with pytest.raises(StackError) as refused:
        stack.start(1.0)
    stack.stop()
    assert str(data_dir / "nats") in str(refused.value)
    assert str(stack.kubesim_state) in str(refused.value)
    assert stack.nats is None, "nothing was started"
    assert stack.kubesim is None
