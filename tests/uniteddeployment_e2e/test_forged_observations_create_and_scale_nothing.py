"""A stolen watcher credential cannot run the cluster: forged observations change nothing real.

On the local stack (real nats-server with each service's credential, kubesim, the services), the
UnitedDeployment sample runs 1/3/2 pods. With the ``watcher`` user's credential:

- a forged ADDED of ``kube-system/sample-ud`` under the real ``default/sample-ud``'s uid: the
  planner may plan for it, but every plan is answered without a write (no such UD is in
  ``kube-system`` on the API server) and no StatefulSet appears there;
- a forged MODIFIED of ``default/sample-ud`` asking 24 replicas (the real one asks 6): the
  planner's scale-ups of the subset StatefulSets are refused, and they keep 1/3/2.
"""

from __future__ import annotations

import asyncio
import copy
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nats
import pytest

from events import codec, subjects
from events.messages import Observation, Outcome, Plan, WatchEventType
from events.streams import OUTCOMES, PLANS, observation_headers
from spreadbus.cli.local_stack import Stack as LocalStack
from spreadbus.cli.local_stack import bus_options
from tests.backbone.bus_recording import read_stream
from tests.examples.manifests import EXAMPLES
from tests.uniteddeployment_e2e.united import Stack
from tests.workloadspread_e2e.stack import running_stack, wait_for

pytestmark = pytest.mark.e2e
SAMPLE = EXAMPLES / "uniteddeployment" / "statefulset-three-zones.yaml"
ASKED = {"subset-a": 1, "subset-b": 3, "subset-c": 2}


async def _forge(data_dir: Path, obj: dict[str, Any], event: WatchEventType) -> None:
    """Publish ``obj`` as the watcher would have observed it."""
    nc = await nats.connect((data_dir / "nats-url").read_text().strip(),
                            **bus_options(data_dir, "watcher"))
    try:
        meta = obj["metadata"]
        observation = Observation(cluster="local", group="apps.kruise.io", version="v1alpha1",
                                  resource="uniteddeployments", event=event, object=obj,
                                  ts=time.time())
        subject = subjects.observation("local", "apps.kruise.io", "uniteddeployments",
                                       meta["namespace"], meta["name"])
        await nc.jetstream().publish(subject, codec.encode(observation), headers=(
            observation_headers(meta["uid"], meta["resourceVersion"], event)))
    finally:
        await nc.close()


def answered(stack: LocalStack, data_dir: Path, after: int,
             which: Callable[[Plan], bool]) -> list[tuple[Plan, Outcome]] | None:
    """Every plan ``which`` picks out among those published after sequence ``after``, with its
    outcome, once there is at least one and every one has an outcome."""
    reader = bus_options(data_dir)
    plans = [p for seq, p in asyncio.run(read_stream(stack.nats.url, PLANS.name, **reader))
             if seq > after and isinstance(p, Plan) and which(p)]
    results = {o.plan_id: o for _, o in asyncio.run(read_stream(stack.nats.url, OUTCOMES.name,
                                                                **reader))
               if isinstance(o, Outcome)}
    if not plans or any(p.id not in results for p in plans):
        return None
    return [(p, results[p.id]) for p in plans]


def last_plan(stack: LocalStack, data_dir: Path) -> int:
    found = asyncio.run(read_stream(stack.nats.url, PLANS.name, **bus_options(data_dir)))
    return found[-1][0] if found else 0


def settled_ud(ud: Stack, stack: LocalStack, data_dir: Path) -> dict[str, Any] | None:
    """The sample UD once its status counts every pod ready and no plan is unanswered, so no
    real change of it is on its way to overtake a forged one."""
    found = ud.get_ud("sample-ud")
    if (found.get("status") or {}).get("readyReplicas") != sum(ASKED.values()):
        return None
    return found if answered(stack, data_dir, 0, lambda p: True) is not None else None


def test_forged_observations_of_a_ud_create_and_scale_nothing(tmp_path: Path) -> None:
    with running_stack(tmp_path, "seed-examples", {}, refusals=True) as (stack, api):
        ud = Stack(api, tmp_path / "kubeconfig")
        ud.kubectl("apply", "-f", str(SAMPLE))
        ud.settled("sample", "node", {("subset-a", "zone-a"): 1, ("subset-b", "zone-b"): 3,
                                      ("subset-c", "zone-c"): 2})
        real = wait_for("sample-ud's status to settle", lambda: settled_ud(ud, stack, tmp_path),
                        30)
        version = int(real["metadata"]["resourceVersion"])

        mark = last_plan(stack, tmp_path)
        elsewhere = copy.deepcopy(real)
        elsewhere["metadata"]["namespace"] = "kube-system"
        elsewhere["metadata"]["resourceVersion"] = str(version + 1_000_000)
        asyncio.run(_forge(tmp_path, elsewhere, "ADDED"))
        planned = wait_for("the plans for the forged kube-system/sample-ud to be answered",
                           lambda: answered(stack, tmp_path, mark, lambda p: p.target.namespace
                                            == "kube-system"), 60)
        assert any(p.verb == "create" and p.target.resource == "statefulsets"
                   for p, _ in planned), [p.target for p, _ in planned]
        assert all(o.result != "applied" for _, o in planned), [
            (p.verb, p.target.name, o.result) for p, o in planned]
        listed = json.loads(ud.kubectl("get", "statefulsets", "-n", "kube-system", "-o",
                                       "json"))
        assert listed["items"] == []

        mark = last_plan(stack, tmp_path)
        scaled = copy.deepcopy(real)
        scaled["spec"]["replicas"] = 24
        scaled["metadata"]["resourceVersion"] = str(version + 1_000_001)
        asyncio.run(_forge(tmp_path, scaled, "MODIFIED"))
        planned = wait_for("the scale-ups of the forged sample-ud to be answered",
                           lambda: answered(stack, tmp_path, mark, lambda p: p.verb == "patch"
                                            and p.target.resource == "statefulsets"), 60,
                           lambda: [(p.verb, p.target.resource, p.target.name) for seq, p in
                                    asyncio.run(read_stream(stack.nats.url, PLANS.name,
                                                            **bus_options(tmp_path)))
                                    if seq > mark])
        assert {o.result for _, o in planned} == {"failed"}, [
            (p.target.name, o.result) for p, o in planned]
        assert all(o.error is not None and o.error.reason == "Forbidden" for _, o in planned)
        assert ud.subset_replicas("sample-ud") == ASKED
