"""One propagation planner round after one member copy's status changed, with 10 and with 1,000
propagated Deployments.

The projection holds a host with two member Clusters, one PropagationPolicy taking every
Deployment (static weights 2:1), the templates, and, once the rule has settled (its writes
folded back as the actuators would leave them), every binding and each member's copies. Then,
``--rounds`` times, one copy's status changes in a member and the rule runs a round over what
changed, through the planner's diff (``plans_for``). Printed: the median round at each size and
the ``ratio`` of the large round to the small one (goal: about 1, the work follows the change,
not the number of bindings). Run: ``python -m bench.propagation_planner_round [--small 10]
[--large 1000] [--rounds 30]``.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from typing import Any

from bench import _tiny
from events import codec, subjects
from events.messages import Observation, SyncMarker
from kubesemantics import json_patch, merge_patch
from spreadbus.features.propagation.planning.rule import PropagationRule
from spreadbus.features.propagation.planning.templates import KARMADA, TEMPLATES
from spreadbus.projection.decision_log import DecisionLog
from spreadbus.projection.kube_state import KubeProjection
from spreadbus.projection.planning import Desired, patch_satisfied, plans_for

NOW = 1_800_000_000.0
MEMBERS = ("member1", "member2")


class Feed:
    def __init__(self) -> None:
        self.view = KubeProjection()
        self.seq = 0
        for cluster in ("host", *MEMBERS):
            for ref in (*KARMADA, *(t.ref for t in TEMPLATES)):
                self.seq += 1
                marker = SyncMarker(cluster=cluster, group=ref.group, version=ref.version,
                                    resource=ref.resource, complete=True)
                self.view.fold(self.seq, subjects.sync(cluster, ref.group, ref.resource),
                               codec.encode(marker))

    def put(self, cluster: str, group: str, resource: str, obj: dict[str, Any]) -> None:
        self.seq += 1
        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", f"uid-{self.seq}")
        meta.setdefault("generation", 1)
        meta["resourceVersion"] = str(self.seq)
        event = Observation(cluster=cluster, group=group, version="v1", resource=resource,
                            event="ADDED", object=obj)
        self.view.fold(self.seq, subjects.observation(cluster, group, resource,
                                                      meta.get("namespace", ""), meta["name"]),
                       codec.encode(event))

    def apply(self, wants: list[Desired]) -> int:
        """The writes as the API servers would leave them; how many changed something."""
        done = 0
        for want in wants:
            cluster, t = want.cluster or "host", want.target
            current = self.view.get(cluster, t.group, t.resource, t.namespace, t.name)
            if want.verb == "create":
                if current is None and want.object is not None:
                    obj = copy.deepcopy(want.object)
                    obj["metadata"].update(name=t.name, namespace=t.namespace)
                    self.put(cluster, t.group, t.resource, obj)
                    done += 1
                continue
            if current is None or want.verb == "delete":
                continue
            if want.patch_type == "json":
                updated = json_patch.apply(current, [o for o in want.patch if o["op"] != "test"])
            elif patch_satisfied(current, want.patch):
                continue
            else:
                updated = merge_patch.apply(current, want.patch)
            if want.verb == "patch":
                updated["metadata"]["generation"] = current["metadata"]["generation"] + 1
            self.put(cluster, t.group, t.resource, updated)
            done += 1
        return done


def cluster(name: str) -> dict[str, Any]:
    return {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": name},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                       "apiEnablements": [{"groupVersion": "apps/v1", "resources": [
                           {"name": "deployments", "kind": "Deployment"}]}],
                       "resourceSummary": {"allocatable": {"cpu": "100", "pods": "1000"}}}}


def settled(templates: int) -> tuple[Feed, PropagationRule]:
    feed = Feed()
    for name in MEMBERS:
        feed.put("host", "cluster.karmada.io", "clusters", cluster(name))
    feed.put("host", "policy.karmada.io", "propagationpolicies", {
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "all", "namespace": "default"},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                 "placement": {"clusterAffinity": {"clusterNames": list(MEMBERS)},
                               "replicaScheduling": {
                                   "replicaSchedulingType": "Divided",
                                   "replicaDivisionPreference": "Weighted",
                                   "weightPreference": {"staticWeightList": [
                                       {"targetCluster": {"clusterNames": ["member1"]},
                                        "weight": 2},
                                       {"targetCluster": {"clusterNames": ["member2"]},
                                        "weight": 1}]}}}}})
    for i in range(templates):
        feed.put("host", "apps", "deployments", {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": f"web-{i}", "namespace": "default"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": f"web-{i}"}},
                     "template": {"metadata": {"labels": {"app": f"web-{i}"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    rule = PropagationRule("host")
    for step in range(12):
        if not feed.apply(rule.desired(feed.view, feed.view.take_changed(), NOW + step)):
            return feed, rule
    raise RuntimeError("the rule did not settle")


def rounds(templates: int, count: int) -> float:
    """Median seconds of a round after one copy's status changed."""
    feed, rule = settled(templates)
    log = DecisionLog()
    whole = []
    for r in range(count):
        name = f"web-{r % templates}"
        placed = feed.view.get("member1", "apps", "deployments", "default", name)
        assert placed is not None, name
        placed["status"] = {"observedGeneration": placed["metadata"]["generation"],
                            "replicas": 2, "readyReplicas": r % 3, "updatedReplicas": 2}
        feed.put("member1", "apps", "deployments", placed)
        started = time.perf_counter()
        wanted = rule.desired(feed.view, feed.view.take_changed(), NOW + 100 + r)
        plans_for(rule, feed.view, log, wanted, cluster="host", now=NOW + 100 + r)
        whole.append(time.perf_counter() - started)
    return statistics.median(whole)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--small", type=int, default=10)
    parser.add_argument("--large", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=30)
    args = _tiny.arguments(parser, argv, {"small": 2, "large": 6, "rounds": 3})
    results = {}
    for templates in (args.small, args.large):
        results[templates] = rounds(templates, args.rounds)
        print(f"{templates} propagated Deployments: a round after one copy's status changed "
              f"{results[templates] * 1000:.2f} ms", flush=True)
    print(f"ratio large/small round: {results[args.large] / results[args.small]:.2f} "
          f"({args.large} vs {args.small} bindings; goal about 1)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
