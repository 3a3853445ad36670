"""Crashes converge: kill -9 of planner, actuator and watcher at random moments during 500
changes (Deployments scaled, and a CloneSet-template UnitedDeployment scaled now and then), and
one kill -9 of nats-server (started again on its store), end in the same state as a run without
faults driven by the same changes, with one outcome per plan, no change applied twice, no older
generation ever written over a newer one, and exactly one workload per UnitedDeployment subset (a
create decided again after a crash finds the workload the first one made).

The faults come from a background thread on a seeded schedule
(:class:`~tests.fixtures.fault_injection.FaultInjector`; the seed is printed, and
``SPREADBUS_FAULT_SEED`` replays a schedule), so they land at arbitrary points of the services'
work, not between two changes of the driver.

``KUBE`` keeps only each Deployment's latest observation, so the history the "never goes back"
check reads is recorded by a follower during the run (:class:`KubeRecorder`).
"""

from __future__ import annotations

import asyncio
import collections
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from events.messages import Observation, Outcome, Plan
from kubesim import KubeSimThread
from spreadbus.runtime.kube_client import kube_api_client
from spreadbus.runtime.nats_server import NatsServer
from tests.backbone.bus_recording import KubeRecorder, last_seq, read_stream
from tests.backbone.service_processes import ServiceProcess, stack
from tests.fixtures.bus_setup import set_up
from tests.fixtures.fault_injection import FaultInjector, fault_seed, replay_hint
from tests.fixtures.generation_feature import PLUGIN as GENERATION_PLUGIN
from tests.fixtures.observed_generation import ANNOTATION, written_value
from tests.fixtures.polling import wait_until

DEPLOYMENTS = 20
CHANGES = 500
FAULTS = 12
UD = "ud"
UD_SCALE_EVERY = 20
"""About one change in this many scales the UnitedDeployment instead of a Deployment."""
UD_CRD = Path(__file__).parents[2] / "deploy" / "crds" / "apps.kruise.io_uniteddeployments.yaml"
UD_RESOURCES = ("apps/v1/deployments,v1/pods,apps/v1/replicasets,apps/v1/statefulsets,"
                "apps/v1/controllerrevisions,apps.kruise.io/v1alpha1/clonesets,"
                "apps.kruise.io/v1beta1/statefulsets,apps.kruise.io/v1alpha1/uniteddeployments")
Change = tuple[str, int]
FinalState = dict[str, Any]


def body(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "app", "image": "img:1"}]}}},
    }


def united_deployment() -> dict[str, Any]:
    """Three CloneSet subsets: 2 fixed, 50%, and the rest."""
    labels = {"app": UD}
    subsets = [{"name": "a", "replicas": 2}, {"name": "b", "replicas": "50%"}, {"name": "c"}]
    return {
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
        "metadata": {"name": UD, "namespace": "default"},
        "spec": {"replicas": 4, "revisionHistoryLimit": 10, "selector": {"matchLabels": labels},
                 "template": {"cloneSetTemplate": {"metadata": {"labels": labels}, "spec": {
                     "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "containers": [{"name": "app", "image": "img:1"}]}}}}},
                 "topology": {"subsets": subsets}},
    }


def change_sequence(rng: random.Random) -> list[Change]:
    # The UD is scaled to 4 or more: below that its fixed subsets (2, and 50% rounded half up)
    # add up to more than spec.replicas, which Kruise's allocator refuses, so nothing converges.
    return [(UD, rng.randrange(4, 12)) if rng.randrange(UD_SCALE_EVERY) == 0
            else (f"d{rng.randrange(DEPLOYMENTS)}", rng.randrange(1, 6))
            for _ in range(CHANGES - DEPLOYMENTS)]


def final_state(apps: Any, custom: Any) -> FinalState:
    """name -> (spec.replicas, generation, annotation) of every Deployment; for the UD, its
    spec.replicas, status, and each subset's workloads' spec.replicas (names are per run)."""
    state: FinalState = {
        d.metadata.name: (d.spec.replicas, d.metadata.generation,
                          (d.metadata.annotations or {}).get(ANNOTATION))
        for d in apps.list_namespaced_deployment("default").items
    }
    ud = custom.get_namespaced_custom_object("apps.kruise.io", "v1alpha1", "default",
                                             "uniteddeployments", UD)
    workloads: dict[str, list[int]] = collections.defaultdict(list)
    for cloneset in custom.list_namespaced_custom_object(
            "apps.kruise.io", "v1alpha1", "default", "clonesets")["items"]:
        subset = cloneset["metadata"]["labels"]["apps.kruise.io/subset-name"]
        workloads[subset].append(cloneset["spec"]["replicas"])
    status = ud.get("status") or {}
    state[UD] = (ud["spec"]["replicas"], ud["metadata"]["generation"],
                 {k: status.get(k) for k in ("observedGeneration", "subsetReplicas",
                                             "updateStatus", "currentRevision")},
                 dict(sorted(workloads.items())))
    return state


def converged(state: FinalState) -> bool:
    replicas, generation, status, workloads = state[UD]
    deployments = [value for name, value in state.items() if name != UD]
    return len(deployments) == DEPLOYMENTS and all(
        annotation == str(generation) for _, generation, annotation in deployments
    ) and status["observedGeneration"] == generation and sum(
        sum(w) for w in workloads.values()) == replicas


def run_changes(
    nats_server: NatsServer, kubesim: KubeSimThread, work: Path, changes: list[Change],
    faults: Callable[[list[ServiceProcess]], FaultInjector] | None,
) -> tuple[FinalState, list[Any], list[Any], list[Any], list[str]]:
    """Drive the changes through a stack; the final state, the PLANS and OUTCOMES streams and
    every KUBE message recorded once converged, and the faults injected."""
    work.mkdir()
    kubeconfig = kubesim.write_kubeconfig(work / "kubeconfig")
    api = kube_api_client(str(kubeconfig))
    apps: Any = client.AppsV1Api(api)
    custom: Any = client.CustomObjectsApi(api)
    client.ApiextensionsV1Api(api).create_custom_resource_definition(
        yaml.safe_load(UD_CRD.read_text()))
    injector: FaultInjector | None = None
    with KubeRecorder(nats_server.url) as recorder, \
            stack(nats_server.url, kubeconfig, work, resources=UD_RESOURCES) as services:
        common = ["--nats-url", nats_server.url, "--cluster", "e2e",
                  "--kubeconfig", str(kubeconfig), "--feature-plugins", GENERATION_PLUGIN]
        extra = [
            ServiceProcess("planner", [*common, "--lease-ttl-seconds", "3",
                                       "--planner-id", "standby"], work).start(),
            ServiceProcess("actuator", common, work).start(),
        ] if faults is not None else []
        victims: list[ServiceProcess] = [*services.values(), *extra]
        try:
            for service in victims:
                service.wait_ready()
            if faults is not None:
                injector = faults(victims)
                injector.start()
            for i in range(DEPLOYMENTS):
                apps.create_namespaced_deployment("default", body(f"d{i}"))
            custom.create_namespaced_custom_object("apps.kruise.io", "v1alpha1", "default",
                                                   "uniteddeployments", united_deployment())
            for name, replicas in changes:
                scale = {"spec": {"replicas": replicas}}
                if name == UD:
                    custom.patch_namespaced_custom_object(
                        "apps.kruise.io", "v1alpha1", "default", "uniteddeployments", UD, scale)
                else:
                    apps.patch_namespaced_deployment(name, "default", scale)
            if injector is not None:
                injector.finish()  # faults may still come while the pipe works off its backlog
            changes_done = time.monotonic()

            def converged_state() -> FinalState | None:
                state = final_state(apps, custom)
                return state if converged(state) else None

            try:
                state = wait_until(converged_state, what="every Deployment annotated",
                                   timeout=90, interval=0.2)
            except pytest.fail.Exception:
                print("\n".join(v.logs()[-1500:] for v in victims))  # shown with the failure
                raise
            print(f"converged {time.monotonic() - changes_done:.1f} s after the last change")

            def every_plan_answered() -> tuple[list[Any], list[Any]] | None:
                plans = [p for _, p in asyncio.run(read_stream(nats_server.url, "PLANS"))]
                outcomes = [o for _, o in asyncio.run(read_stream(nats_server.url, "OUTCOMES"))]
                return (plans, outcomes) if len(outcomes) >= len(plans) else None

            plans, outcomes = wait_until(every_plan_answered, what="an outcome for every plan",
                                         timeout=60, interval=0.3)
            published = asyncio.run(last_seq(nats_server.url, "KUBE"))
            wait_until(lambda: recorder.last_seq >= published,
                       what=f"KUBE recorded up to {published}")
            kube = [o for _, o in recorder.messages()]
        finally:
            if injector is not None:
                injector.stop()
            for service in extra:
                service.kill()
    api.close()  # type: ignore[no-untyped-call]
    return state, plans, outcomes, kube, injector.done if injector is not None else []


def annotations_seen(kube: list[Any]) -> dict[str, list[tuple[int, int, int]]]:
    """name -> (resourceVersion, generation, annotation) of every observation carrying one."""
    seen: dict[str, list[tuple[int, int, int]]] = collections.defaultdict(list)
    for message in kube:
        if not isinstance(message, Observation) or message.resource != "deployments":
            continue
        metadata = message.object["metadata"]
        value = (metadata.get("annotations") or {}).get(ANNOTATION)
        if value is not None:
            seen[metadata["name"]].append((int(metadata["resourceVersion"]),
                                           int(metadata["generation"]), int(value)))
    return seen


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.chaos
def test_kills_at_random_moments_and_a_nats_restart_end_as_a_run_without_faults(
    nats_server: NatsServer, kubesim_factory: Callable[..., KubeSimThread], tmp_path: Path
) -> None:
    seed = fault_seed()
    print(replay_hint(seed))
    rng = random.Random(seed)
    changes = change_sequence(rng)

    with NatsServer(store_dir=tmp_path / "calm-nats") as calm_nats:
        set_up(calm_nats.url)
        calm, *_ = run_changes(calm_nats, kubesim_factory(), tmp_path / "calm", changes, None)
    state, plans, outcomes, kube, faults = run_changes(
        nats_server, kubesim_factory(), tmp_path / "faults", changes,
        lambda victims: FaultInjector(rng, victims, nats_server, faults=FAULTS),
    )
    print(f"faults injected: {collections.Counter(faults)}")
    assert len(faults) == FAULTS
    assert state == calm
    _, _, _, workloads = state[UD]
    assert sorted(workloads) == ["a", "b", "c"]
    assert all(len(replicas) == 1 for replicas in workloads.values()), "one workload a subset"

    assert all(isinstance(p, Plan) for p in plans)
    assert all(isinstance(o, Outcome) for o in outcomes)
    per_plan = collections.Counter(o.plan_id for o in outcomes)
    assert set(per_plan) == {p.id for p in plans}
    assert max(per_plan.values()) == 1
    assert len({p.id for p in plans}) == len(plans)  # no plan published twice
    by_id = {p.id: p for p in plans}
    generation_plans = [p for p in plans if p.rule == "observed-generation"]
    applied = collections.Counter(
        (plan.target.name, written_value(plan.patch))
        for plan in (by_id[o.plan_id] for o in outcomes if o.result == "applied")
        if plan.rule == "observed-generation"
    )
    assert max(applied.values()) == 1  # no change applied twice
    created = collections.Counter(
        plan.target.name for plan in (by_id[o.plan_id] for o in outcomes if o.result == "applied")
        if plan.verb == "create" and plan.target.resource == "clonesets"
    )
    assert len(created) == 3, "the three subset workloads"
    assert max(created.values()) == 1, "each subset workload created once"
    # No older generation is ever written: every plan writes only the generation it tests,
    # and, in resourceVersion order, no Deployment's annotation ever goes back.
    for plan in generation_plans:
        assert plan.patch[0] == {"op": "test", "path": "/metadata/generation",
                                 "value": int(written_value(plan.patch) or -1)}
    for name, seen in annotations_seen(kube).items():
        values = [annotation for _, _, annotation in sorted(seen)]
        assert values == sorted(values), f"{name} went back to an older generation: {values}"
        assert all(annotation <= generation for _, generation, annotation in seen)
    print(f"{len(plans)} plans, results {collections.Counter(o.result for o in outcomes)}")
