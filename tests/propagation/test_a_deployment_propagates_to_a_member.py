"""One nats-server, a host control plane and one member, each a real kubesim, and spreadbus's
services on both sides: a Deployment (and a CloneSet) in the host that a PropagationPolicy
selects gets its
ResourceBinding (scheduled to the member), its copy created in the member by the member's
actuator (which reads the binding from the host), the copy's pods run there, and the member's
status is aggregated back into the binding and summed into the template in the host. Plans for
the member that the host's binding does not ask for (the copy's image swapped, a copy under
another name) are refused by the member's actuator and change nothing. When the policy no longer
fits the member, the copy is deleted there; when the template goes, its binding goes too (the
host's garbage collector, then the planner's finalizer). A ClusterRole a ClusterPropagationPolicy
takes is copied into the member the same way (the watchers list ClusterRoles only with
``--propagate-clusterroles``); a plan asking the member's actuator for a ClusterRole no binding
in the host names, or for wider rules on the copy, is refused and writes nothing."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
import pytest

from events import codec, subjects
from events.messages import ObjectRef, Plan, Precondition
from spreadbus.features.propagation.core.member_copy import member_copy
from spreadbus.runtime.nats_server import NatsServer
from tests.backbone.service_processes import ServiceProcess, logs_on_failure
from tests.fixtures.kubesim import kubesim_process
from tests.fixtures.polling import wait_until

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = str(Path(sys.executable).parent / "kubectl")
CRDS = [ROOT / "deploy" / "crds" / f for f in (
    "cluster.karmada.io_clusters.yaml", "policy.karmada.io_propagationpolicies.yaml",
    "policy.karmada.io_clusterpropagationpolicies.yaml", "work.karmada.io_resourcebindings.yaml",
    "work.karmada.io_clusterresourcebindings.yaml")]
HOST_RESOURCES = ",".join((
    "cluster.karmada.io/v1alpha1/clusters", "policy.karmada.io/v1alpha1/propagationpolicies",
    "policy.karmada.io/v1alpha1/clusterpropagationpolicies",
    "work.karmada.io/v1alpha2/resourcebindings", "work.karmada.io/v1alpha2/clusterresourcebindings",
    "apps/v1/deployments", "apps/v1/statefulsets", "apps.kruise.io/v1alpha1/clonesets",
    "v1/configmaps",
    "rbac.authorization.k8s.io/v1/clusterroles"))
RBAC = "rbac.authorization.k8s.io"
ROLE_AND_POLICY = [
    {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": "demo-role"},
     "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
    {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
     "metadata": {"name": "demo-role"},
     "spec": {"resourceSelectors": [{"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole",
                                     "name": "demo-role"}],
              "placement": {"clusterAffinity": {"clusterNames": ["member1"]}}}},
]

POLICY = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
          "metadata": {"name": "demo", "namespace": "default"},
          "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                          "name": "demo-deploy"},
                                         {"apiVersion": "apps.kruise.io/v1alpha1",
                                          "kind": "CloneSet", "name": "demo-clone"}],
                   "placement": {"clusterAffinity": {"clusterNames": ["member1"]},
                                 "replicaScheduling": {"replicaSchedulingType": "Divided"}}}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": "demo-deploy", "namespace": "default"},
              "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "demo"}},
                       "template": {"metadata": {"labels": {"app": "demo"}},
                                    "spec": {"containers": [{
                                        "name": "c", "image": "nginx",
                                        "resources": {"requests": {"cpu": "100m"}}}]}}}}

CLONESET = {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "demo-clone", "namespace": "default"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "clone"}},
                     "template": {"metadata": {"labels": {"app": "clone"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), *args], input=stdin,
                          capture_output=True, text=True, timeout=60, check=True)
    return done.stdout


def get(kubeconfig: Path, *what: str) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = json.loads(kubectl(kubeconfig, "get", *what, "-o", "json"))
    except subprocess.CalledProcessError:
        return None
    return found


@contextlib.contextmanager
def started(*services: ServiceProcess) -> Iterator[None]:
    try:
        for service in services:
            service.start()
        with logs_on_failure(*services):
            yield
    finally:
        for service in services:
            with contextlib.suppress(Exception):
                service.terminate(10)
            service.kill()


async def publish(url: str, *plans: Plan) -> None:
    nc = await nats.connect(url)
    try:
        for plan in plans:
            target = plan.target
            await nc.jetstream().publish(
                subjects.plan(plan.cluster, plan.verb, target.group, target.resource,
                              target.namespace, target.name), codec.encode(plan))
    finally:
        await nc.close()


def test_a_deployment_propagates_to_a_member_and_its_status_comes_back(
    nats_server: NatsServer, tmp_path: Path,
) -> None:
    (tmp_path / "host").mkdir()
    (tmp_path / "member1").mkdir()
    logs, agent_logs = tmp_path / "logs" / "host", tmp_path / "logs" / "member1"
    logs.mkdir(parents=True)
    agent_logs.mkdir()
    with kubesim_process(tmp_path / "host" / "kubeconfig", "--control-plane") as host, \
            kubesim_process(tmp_path / "member1" / "kubeconfig") as member:
        for crd in CRDS:
            kubectl(host.kubeconfig, "apply", "-f", str(crd))
        bus = ["--nats-url", nats_server.url]
        hub = [*bus, "--cluster", "host", "--kubeconfig", str(host.kubeconfig)]
        agent = [*bus, "--cluster", "member1", "--kubeconfig", str(member.kubeconfig),
                 "--host-kubeconfig", str(host.kubeconfig)]
        services = [
            ServiceProcess("watcher", [*hub, "--resources", HOST_RESOURCES], logs),
            ServiceProcess("planner", [*hub, "--lease-ttl-seconds", "3"], logs),
            ServiceProcess("actuator", hub, logs),
            ServiceProcess("watcher", [*agent, "--heartbeat-seconds", "0.5",
                                       "--propagate-clusterroles=true"], agent_logs),
            ServiceProcess("actuator", agent, agent_logs),
        ]
        with started(*services):
            for service in services:
                service.wait_ready()
            kubectl(host.kubeconfig, "apply", "-f", "-", stdin=json.dumps(POLICY))
            kubectl(host.kubeconfig, "apply", "-f", "-", stdin=json.dumps(DEPLOYMENT))
            kubectl(host.kubeconfig, "apply", "-f", "-", stdin=json.dumps(CLONESET))
            for obj in ROLE_AND_POLICY:
                kubectl(host.kubeconfig, "apply", "-f", "-", stdin=json.dumps(obj))

            def scheduled() -> dict[str, Any] | None:
                rb = get(host.kubeconfig, "resourcebindings.work.karmada.io",
                         "demo-deploy-deployment", "-n", "default")
                status = (rb or {}).get("status", {})
                ok = rb is not None and status.get("schedulerObservedGeneration") == \
                    rb["metadata"]["generation"] and "lastScheduledTime" in status
                return rb if ok else None

            rb = wait_until(scheduled, what="the binding scheduled", timeout=90, interval=0.3)
            assert rb["spec"]["clusters"] == [{"name": "member1", "replicas": 3}]
            host_template = get(host.kubeconfig, "deployment", "demo-deploy", "-n", "default")
            assert host_template is not None
            assert rb["spec"]["resource"]["uid"] == host_template["metadata"]["uid"]

            def running() -> dict[str, Any] | None:
                obj = get(host.kubeconfig, "deployment", "demo-deploy", "-n", "default")
                status = (obj or {}).get("status", {})
                return obj if status.get("readyReplicas") == 3 else None

            template = wait_until(running, what="the template's status summed from member1",
                                  timeout=90, interval=0.3)
            status = template["status"]
            assert (status["replicas"], status["availableReplicas"],
                    status["updatedReplicas"]) == (3, 3, 3)
            copy_ = get(member.kubeconfig, "deployment", "demo-deploy", "-n", "default")
            assert copy_ is not None
            assert copy_["spec"]["replicas"] == 3
            assert copy_["metadata"]["annotations"]["resourcebinding.karmada.io/name"] == \
                "demo-deploy-deployment"
            pods = json.loads(kubectl(member.kubeconfig, "get", "pods", "-n", "default", "-l",
                                      "app=demo", "-o", "json"))["items"]
            assert len(pods) == 3
            aggregated = get(host.kubeconfig, "resourcebindings.work.karmada.io",
                             "demo-deploy-deployment", "-n", "default")
            assert aggregated is not None
            rb = aggregated
            items = rb["status"]["aggregatedStatus"]
            assert [(i["clusterName"], i["health"]) for i in items] == [("member1", "Healthy")]
            # A CloneSet goes the same way, its status aggregated as Karmada's third-party
            # interpreter does (the member's CloneSet controller runs its pods).
            clone = wait_until(
                lambda: (lambda o: o if (o or {}).get("status", {}).get("readyReplicas") == 2
                         else None)(get(host.kubeconfig, "cloneset", "demo-clone", "-n",
                                        "default")),
                what="the CloneSet template's status summed from member1", timeout=90,
                interval=0.3)
            assert (clone["status"]["replicas"], clone["status"]["updatedReadyReplicas"]) == (2, 2)
            clone_copy = get(member.kubeconfig, "cloneset", "demo-clone", "-n", "default")
            assert clone_copy is not None
            assert clone["status"]["updateRevision"] == clone_copy["status"]["updateRevision"]
            # No host Deployment ran a pod: the control plane runs none.
            assert json.loads(kubectl(host.kubeconfig, "get", "pods", "-A", "-o",
                                      "json"))["items"] == []

            # The attacks, on the real binding at its generation: a patch swapping the image of
            # member1's copy (its share of replicas kept), and a copy under a name the binding
            # does not name.
            meta = rb["metadata"]
            governor = ObjectRef(group="work.karmada.io", version="v1alpha2",
                                 resource="resourcebindings", namespace="default",
                                 name=meta["name"], uid=meta["uid"])
            swap = Plan(id="forged-swap", cluster="member1", verb="patch", rule="propagation",
                        target=ObjectRef(group="apps", version="v1", resource="deployments",
                                         namespace="default", name="demo-deploy",
                                         uid=copy_["metadata"]["uid"]),
                        patch_type="json",
                        patch=[{"op": "replace", "value": "evil:latest",
                                "path": "/spec/template/spec/containers/0/image"}],
                        precondition=Precondition(
                            uid=copy_["metadata"]["uid"],
                            resource_version=copy_["metadata"]["resourceVersion"]),
                        governor=governor, governor_generation=meta["generation"])
            forged = member_copy(template, "member1", 3, "demo-deploy-deployment", "default")
            forged["metadata"]["name"] = "demo-deploy-2"
            other = Plan(id="forged-copy", cluster="member1", verb="create", rule="propagation",
                         target=ObjectRef(group="apps", version="v1", resource="deployments",
                                          namespace="default", name="demo-deploy-2"),
                         object=forged, governor=governor,
                         governor_generation=meta["generation"])
            # A ClusterRole the host's ClusterResourceBinding does not name (every verb on
            # everything), and a patch widening the rules of the copy it does name.
            role_copy = wait_until(lambda: get(member.kubeconfig, "clusterrole", "demo-role"),
                                   what="the ClusterRole copied into member1", timeout=60,
                                   interval=0.3)
            assert role_copy["rules"] == ROLE_AND_POLICY[0]["rules"]
            crb = get(host.kubeconfig, "clusterresourcebindings.work.karmada.io",
                      "demo-role-clusterrole")
            assert crb is not None
            assert crb["spec"]["clusters"][0]["name"] == "member1"
            role_governor = ObjectRef(group="work.karmada.io", version="v1alpha2",
                                      resource="clusterresourcebindings",
                                      name=crb["metadata"]["name"],
                                      uid=crb["metadata"]["uid"])
            admin = copy.deepcopy(role_copy)
            admin["metadata"] = {"name": "spreadbus-admin",
                                 "annotations": role_copy["metadata"]["annotations"]}
            admin["rules"] = [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
            escalate = Plan(id="forged-role", cluster="member1", verb="create",
                            rule="propagation",
                            target=ObjectRef(group=RBAC, version="v1", resource="clusterroles",
                                             name="spreadbus-admin"),
                            object=admin, governor=role_governor,
                            governor_generation=crb["metadata"]["generation"])
            widen = Plan(id="forged-rules", cluster="member1", verb="patch", rule="propagation",
                         target=ObjectRef(group=RBAC, version="v1", resource="clusterroles",
                                          name="demo-role", uid=role_copy["metadata"]["uid"]),
                         patch_type="json",
                         patch=[{"op": "add", "path": "/rules/0/verbs/-", "value": "delete"}],
                         precondition=Precondition(
                             uid=role_copy["metadata"]["uid"],
                             resource_version=role_copy["metadata"]["resourceVersion"]),
                         governor=role_governor,
                         governor_generation=crb["metadata"]["generation"])
            asyncio.run(publish(nats_server.url, swap, other, escalate, widen))
            member_actuator = services[4]

            def refused() -> float:
                return sum(float(line.split()[-1])
                           for line in member_actuator.metrics().splitlines()
                           if line.startswith("spreadbus_actuator_forbidden_plans_total")
                           and 'rule="propagation"' in line)

            wait_until(lambda: refused() == 4, what="the four forged plans refused",
                       timeout=30, interval=0.2)
            assert get(member.kubeconfig, "clusterrole", "spreadbus-admin") is None
            role_kept = get(member.kubeconfig, "clusterrole", "demo-role")
            assert role_kept is not None
            assert role_kept["rules"] == ROLE_AND_POLICY[0]["rules"]
            assert get(member.kubeconfig, "deployment", "demo-deploy-2", "-n", "default") is None
            kept = get(member.kubeconfig, "deployment", "demo-deploy", "-n", "default")
            assert kept is not None
            assert kept["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx"

            # The policy no longer names member1: no cluster fits, the binding's clusters are
            # cleared, and member1's actuator deletes its copy (the binding, read in the host,
            # names it).
            kubectl(host.kubeconfig, "patch", "propagationpolicy", "demo", "-n", "default",
                    "--type", "merge", "-p", json.dumps({"spec": {"placement": {
                        "clusterAffinity": {"clusterNames": ["member9"]}}}}))
            wait_until(lambda: get(member.kubeconfig, "deployment", "demo-deploy", "-n",
                                   "default") is None,
                       what="member1's copy deleted", timeout=60, interval=0.3)
            cleared = get(host.kubeconfig, "resourcebindings.work.karmada.io",
                          "demo-deploy-deployment", "-n", "default")
            assert cleared is not None
            assert cleared["spec"].get("clusters", []) == []

            # The template goes: the host's garbage collector deletes its binding, which the
            # planner lets go once no copy is left.
            kubectl(host.kubeconfig, "delete", "deployment", "demo-deploy", "-n", "default",
                    "--wait=false")
            wait_until(lambda: get(host.kubeconfig, "resourcebindings.work.karmada.io",
                                   "demo-deploy-deployment", "-n", "default") is None,
                       what="the binding deleted with its template", timeout=60, interval=0.3)
