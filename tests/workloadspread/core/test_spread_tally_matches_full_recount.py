"""The planner's pod-by-pod tally of a WorkloadSpread gives what the full recount gives.

Random sequences of pod creations, changes and deletions, reservations, workload scaling, version
changes, status write-backs and the passing of time are applied to a :class:`SpreadTally` one change
at a time; after each, its plan must equal
:func:`~spreadbus.features.workloadspread.core.reconcile.plan_workloadspread` over every pod, and
every pod whose deletion cost must change must have been handed out, now or at an earlier plan with
the same value and the same observation of the pod.

The WorkloadSpread is Adaptive in some runs (pods pending unschedulable since a moment near
``now``, so deadlines and the recovery window pass while the sequence runs), deletions are in
flight often (deleting reservations, and the ``deletingPods`` a written status carries), and
pods not annotated for it run on nodes that fit one subset, two (the quota left decides) or none.
All of it is planned pod by pod, never by the full computation, and checked against it. Where no
pod is left to match by its node, the active pods the tally holds per version and subset are also
checked against the counting rule's recount (what the webhook and the offline commands count).
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spreadbus.features.workloadspread.core.custom_workloads import Whitelist
from spreadbus.features.workloadspread.core.model import WorkloadSpread, format_time, from_object
from spreadbus.features.workloadspread.core.occupancy import (
    Reservation,
    SubsetLoad,
    loads_from_pods,
)
from spreadbus.features.workloadspread.core.pod_state import matched, version
from spreadbus.features.workloadspread.core.reconcile import plan_workloadspread, workload_pods
from spreadbus.features.workloadspread.core.target import lookup_in
from spreadbus.features.workloadspread.planning.spread_tally import SpreadTally
from tests.workloadspread.core.builders import (
    deployment,
    node,
    pod,
    replicaset,
    subset,
    workloadspread,
)

START = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
COST = "controller.kubernetes.io/pod-deletion-cost"
NAMES = [f"p{i}" for i in range(8)]
VERSIONS = ["aaa", "bbb"]
WHITELIST = Whitelist()
# s0 and s1 require their zone; s2 takes any node, so a pod on node-1 fits s0 and s2 and the
# quota left decides (node-9 does not exist at first: such a pod fits nowhere, until it comes)
NODES = {"node-1": node("node-1", "s0"), "node-2": node("node-2", "s1")}

limits = st.one_of(st.none(), st.integers(0, 5), st.sampled_from(["50%", "30%"]))
subsets_st = st.lists(
    st.tuples(limits, st.one_of(st.none(), st.integers(0, 2))), min_size=1, max_size=3
)

pod_change = st.fixed_dictionaries({
    "op": st.just("pod"),
    "name": st.sampled_from(NAMES),
    "version": st.sampled_from(VERSIONS),
    # a subset index, an unknown subset, another WorkloadSpread, or no annotation at all
    "match": st.sampled_from(["s0", "s1", "s2"] * 2 + ["gone", "other", "none", "none"]),
    "phase": st.sampled_from(["Running", "Running", "Pending", "Pending", "Succeeded"]),
    "ready": st.booleans(),
    "deleting": st.integers(0, 19).map(lambda i: i == 0),
    "cost": st.sampled_from([None, None, "100", "200", "300", "-100", "-400", "0", "500"]),
    "created": st.integers(0, 3),
    # pending pods: unschedulable (the Adaptive candidates) since this many seconds ago
    "unschedulable": st.one_of(st.none(), st.integers(0, 25), st.integers(0, 25)),
    "node": st.sampled_from(["node-1", "node-1", "node-2", "node-9"]),
})
ops = st.one_of(
    pod_change,
    pod_change,
    pod_change,
    st.fixed_dictionaries({"op": st.just("delete"), "name": st.sampled_from(NAMES)}),
    st.fixed_dictionaries({"op": st.just("replicas"), "replicas": st.integers(0, 12)}),
    st.fixed_dictionaries({"op": st.just("latest"),
                           "latest": st.sampled_from([*VERSIONS, None])}),
    st.fixed_dictionaries({"op": st.just("time"), "seconds": st.integers(1, 20)}),
    # the webhook admits the deletion of a pod: a deleting reservation where the pod is
    st.fixed_dictionaries({"op": st.just("deleting"), "name": st.sampled_from(NAMES),
                           "age": st.integers(0, 20)}),
    st.fixed_dictionaries({"op": st.just("write_status")}),
    # node-9 comes in a zone, or goes
    st.fixed_dictionaries({"op": st.just("node"),
                           "zone": st.sampled_from([None, "s0", "s1"])}),
    st.fixed_dictionaries({
        "op": st.just("reservations"),
        "entries": st.lists(st.tuples(
            st.sampled_from([*NAMES, "uid-x", "uid-y"]), st.sampled_from(VERSIONS),
            st.sampled_from(["s0", "s1", "s2"]),
            st.integers(0, 3).map(lambda i: "deleting" if i == 0 else "creating"),
            st.integers(0, 40)), max_size=4),
    }),
)
shapes = st.fixed_dictionaries({
    "subsets": subsets_st,
    # rescheduleCriticalSeconds, or not Adaptive
    "adaptive": st.one_of(st.none(), st.integers(1, 15)),
    "recover_after": st.sampled_from([20.0, 45.0, 300.0]),
    # pods outside this WorkloadSpread's annotations (matched by their node) in this run
    "unmatched": st.booleans(),
    # Schedulable=False written for the first subset before the sequence starts
    "closed": st.booleans(),
    # top-level deletingPods written before the sequence starts: (pod, subset, age)
    "deleting": st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(["s0", "s1"]),
                                   st.integers(0, 20)), max_size=4),
})


class World:
    def __init__(self, limits_and_minimums: list[tuple[Any, int | None]],
                 adaptive: int | None = None, unmatched: bool = True,
                 closed: bool = False, deleting: list[tuple[str, str, int]] | None = None
                 ) -> None:
        subsets = []
        for i, (limit, minimum) in enumerate(limits_and_minimums):
            extra = {} if minimum is None else {"minReplicas": minimum}
            subsets.append(subset(f"s{i}", limit, **extra))
        if len(subsets) > 2:
            del subsets[2]["requiredNodeSelectorTerm"]
        if len(subsets) > 1:
            subsets[1]["patch"] = {"metadata": {"labels": {"zone": "s1"}}}
        strategy = None if adaptive is None else {
            "type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": adaptive}}
        top: dict[str, dict[str, Any]] = {}
        if closed:
            top["s0"] = {"name": "s0", "conditions": [{
                "type": "Schedulable", "status": "False", "reason": "PodUnschedulable",
                "lastTransitionTime": "2026-01-01T11:59:50Z"}]}
        for who, subset_name, age in deleting or []:
            entry = top.setdefault(subset_name, {"name": subset_name})
            at = START - timedelta(seconds=age)
            entry.setdefault("deletingPods", {})[who] = format_time(at)
        status = {"subsetStatuses": list(top.values())} if top else None
        self.ws: WorkloadSpread = from_object(
            workloadspread(*subsets, strategy=strategy, status=status))
        self.unmatched = unmatched
        self.nodes: dict[str, Any] = dict(NODES)
        self.deploy = deployment(replicas=6)
        self.rs = {v: replicaset(self.deploy, v) for v in VERSIONS}
        self.pods: dict[str, dict[str, Any]] = {}
        self.latest: str | None = "aaa"
        self.now = START
        self.reservations: list[Reservation] = []

    def lookup(self) -> Any:
        return lookup_in([self.deploy, *self.rs.values()])

    def governed(self, obj: dict[str, Any]) -> bool:
        return bool(workload_pods(self.ws, self.deploy, [obj], lookup=self.lookup(),
                                  whitelist=WHITELIST))

    def make_pod(self, change: dict[str, Any]) -> dict[str, Any]:
        match = change["match"]
        if not self.unmatched and match in ("other", "none"):
            match = "s0"
        ws_name: str | None = None
        subset_name: str | None = None
        if match == "other":
            ws_name, subset_name = "another", "s0"
        elif match != "none":
            ws_name, subset_name = self.ws.name, match
        created = f"2026-01-01T00:00:0{change['created']}Z"
        conditions = []
        if change["phase"] == "Pending" and change["unschedulable"] is not None:
            since = self.now - timedelta(seconds=change["unschedulable"])
            created = format_time(since)
            conditions.append({"type": "PodScheduled", "status": "False",
                               "reason": "Unschedulable"})
        obj = pod(change["name"], owner=self.rs[change["version"]], ws=ws_name,
                  subset_name=subset_name, phase=change["phase"], ready=change["ready"],
                  node=change.get("node", "node-1") if change["phase"] != "Pending" else "",
                  created=created, conditions=conditions)
        meta = obj["metadata"]
        if change["cost"] is not None:
            meta.setdefault("annotations", {})[COST] = change["cost"]
        if change["deleting"]:
            meta["deletionTimestamp"] = "2026-01-01T11:59:00Z"
        return obj


def expected_plan(world: World, recover_after: float) -> Any:
    governed = [world.pods[k] for k in sorted(world.pods) if world.governed(world.pods[k])]
    return plan_workloadspread(world.ws, workload=world.deploy, pods=governed, nodes=world.nodes,
                               reservations=world.reservations, now=world.now,
                               whitelist=WHITELIST, latest=world.latest,
                               recover_after_seconds=recover_after)


def assert_active_pods_as_the_counting_rule_counts(world: World, got: Any) -> None:
    """Each version's subset statuses count the active pods the occupancy recount counts."""
    governed = [p for p in world.pods.values() if world.governed(p)]
    recount = loads_from_pods(world.ws, governed, ())
    for version_ in VERSIONS:
        statuses = got.status.versioned_subset_statuses.get(version_, ())
        counted = {status.name: status.replicas for status in statuses}
        for spec in world.ws.subsets:
            load = recount.get(version_, {}).get(spec.name, SubsetLoad())
            assert counted.get(spec.name, 0) == load.active, (version_, spec.name)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes, st.lists(ops, min_size=8, max_size=40))
def test_the_tally_plans_what_the_full_recount_plans_after_every_change(
    shape: dict[str, Any], changes: list[dict[str, Any]]
) -> None:
    world = World(shape["subsets"], adaptive=shape["adaptive"], unmatched=shape["unmatched"],
                  closed=shape["closed"], deleting=shape["deleting"])
    recover_after = shape["recover_after"]
    tally = SpreadTally(world.ws)
    seen: dict[str, dict[str, Any] | None] = {}  # what the tally was told, per pod
    handed: dict[str, tuple[str, int]] = {}  # pod key -> (value, id of the observation)

    for change in changes:
        op = change["op"]
        if op == "pod":
            world.pods[f"default/{change['name']}"] = world.make_pod(change)
        elif op == "delete":
            world.pods.pop(f"default/{change['name']}", None)
        elif op == "replicas":
            world.deploy = copy.deepcopy(world.deploy)
            world.deploy["spec"]["replicas"] = change["replicas"]
        elif op == "latest":
            world.latest = change["latest"]
        elif op == "time":
            world.now += timedelta(seconds=change["seconds"])
        elif op == "node":
            if change["zone"] is None:
                world.nodes.pop("node-9", None)
            else:
                world.nodes["node-9"] = node("node-9", change["zone"])
            tally.node_changed("node-9")  # what the rule does for a node that changed
        elif op == "deleting":
            target = world.pods.get(f"default/{change['name']}")
            found = matched(target) if target is not None else None
            if target is not None and found is not None and found.name == world.ws.name:
                world.reservations = [*world.reservations, Reservation(
                    world.ws.key, version(target), found.subset, change["name"], "deleting",
                    world.now - timedelta(seconds=change["age"]))]
        elif op == "reservations":
            world.reservations = [
                Reservation(world.ws.key, version, subset_name, who, kind,
                            world.now - timedelta(seconds=age))
                for who, version, subset_name, kind, age in change["entries"]
            ]
        expected = expected_plan(world, recover_after)
        if op == "write_status":
            world.ws = msgspec.structs.replace(world.ws, status=expected.status)
            expected = expected_plan(world, recover_after)

        # What the rule does: tell the tally about every pod whose observation or governance
        # changed (a workload change re-evaluates them all, as the rule rebuilds then).
        for key in sorted(set(world.pods) | set(seen)):
            obj = world.pods.get(key)
            now_governed = obj if obj is not None and world.governed(obj) else None
            if seen.get(key) is not now_governed:
                tally.apply(key, now_governed)
                seen[key] = now_governed
                if now_governed is None:
                    seen.pop(key)

        got = tally.plan(world.ws, workload=world.deploy, latest=world.latest,
                         reservations=world.reservations, now=world.now, whitelist=WHITELIST,
                         nodes=lambda _: world.nodes, recover_after_seconds=recover_after)
        assert not got.everything
        assert got.status == expected.status
        assert got.requeue_at == expected.requeue_at
        assert got.evictions == expected.evictions
        assert got.pod_patches == expected.pod_patches
        assert tally.differing() == expected.deletion_costs
        if not world.unmatched:
            assert_active_pods_as_the_counting_rule_counts(world, got)
        for key, value in expected.deletion_costs.items():
            if key not in got.updates:
                # Not handed out again: it was, with this value, for this very observation.
                assert handed.get(key) == (value, id(world.pods[key])), key
        assert set(got.updates) <= set(expected.deletion_costs)
        for key, value in got.updates.items():
            handed[key] = (value, id(world.pods[key]))


def test_a_pod_that_changes_alone_is_the_only_one_handed_out() -> None:
    world = World([(None, None), (None, None)])
    tally = SpreadTally(world.ws)
    for i, name in enumerate(NAMES):
        change = {"name": name, "version": "aaa", "match": f"s{i % 2}", "phase": "Running",
                  "ready": True, "deleting": False, "cost": None, "created": 0,
                  "unschedulable": None}
        world.pods[f"default/{name}"] = world.make_pod(change)
        tally.apply(f"default/{name}", world.pods[f"default/{name}"])
    first = tally.plan(world.ws, workload=world.deploy, latest="aaa", reservations=[],
                       now=world.now, whitelist=WHITELIST, nodes=lambda _: {})
    assert not first.everything
    assert first.updates == {f"default/{n}": "200" if i % 2 == 0 else "100"
                             for i, n in enumerate(NAMES)}
    # p3 gets its annotation written; only p3 is looked at, and nothing is left to write.
    written = copy.deepcopy(world.pods["default/p3"])
    written["metadata"]["annotations"][COST] = "100"
    tally.apply("default/p3", written)
    second = tally.plan(world.ws, workload=world.deploy, latest="aaa", reservations=[],
                        now=world.now, whitelist=WHITELIST, nodes=lambda _: {})
    assert second.updates == {}
    assert "default/p3" not in tally.differing()


state_pod = st.fixed_dictionaries({
    "version": st.sampled_from(VERSIONS),
    "match": st.sampled_from(["s0", "s1", "s0", "s1", "none", "other"]),
    "phase": st.sampled_from(["Running", "Running", "Pending", "Pending", "Succeeded"]),
    "ready": st.booleans(),
    "deleting": st.integers(0, 9).map(lambda i: i == 0),
    "cost": st.none(),
    "created": st.just(0),
    "unschedulable": st.one_of(st.none(), st.integers(0, 25), st.integers(0, 25)),
    "node": st.sampled_from(["node-1", "node-1", "node-2", "node-9"]),
})
entry = st.tuples(st.sampled_from(NAMES), st.sampled_from(["s0", "s1"]), st.integers(0, 20))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    limit=st.one_of(st.integers(1, 6), st.sampled_from(["50%", "30%"])),
    adaptive=st.one_of(st.none(), st.integers(1, 15)),
    closed=st.booleans(),
    pods=st.dictionaries(st.sampled_from(NAMES), state_pod, min_size=4),
    top_deleting=st.lists(entry, max_size=5),
    reserved=st.lists(st.tuples(entry, st.sampled_from(VERSIONS), st.booleans()), max_size=6),
    later=st.tuples(st.sampled_from(NAMES), state_pod, st.integers(0, 20)),
)
def test_deletions_in_flight_and_stuck_pods_are_counted_as_the_full_recount_counts(
    limit: Any, adaptive: int | None, closed: bool, pods: dict[str, dict[str, Any]],
    top_deleting: list[tuple[str, str, int]],
    reserved: list[tuple[tuple[str, str, int], str, bool]],
    later: tuple[str, dict[str, Any], int],
) -> None:
    """Many pods of two versions with deletions in flight in both status lists, and stuck pods:
    ``missingReplicas`` depends on where the last pod being deleted stands among the others,
    and evictions come in the full computation's order; both from a fresh tally and after one
    more pod change with time passing."""
    world = World([(limit, None), (limit, None), (None, None)], adaptive=adaptive,
                  closed=closed, deleting=top_deleting)
    for name, change in pods.items():
        world.pods[f"default/{name}"] = world.make_pod({"name": name, **change})
    world.reservations = [
        Reservation(world.ws.key, version_, subset_name, who,
                    "deleting" if deleting else "creating",
                    world.now - timedelta(seconds=age))
        for (who, subset_name, age), version_, deleting in reserved
    ]
    tally = SpreadTally(world.ws)
    tally.reset((k, p) for k, p in sorted(world.pods.items()))
    name, change, seconds = later
    for step in range(2):
        expected = expected_plan(world, 45.0)
        got = tally.plan(world.ws, workload=world.deploy, latest=world.latest,
                         reservations=world.reservations, now=world.now, whitelist=WHITELIST,
                         nodes=lambda _: world.nodes, recover_after_seconds=45.0)
        assert not got.everything
        assert got.status == expected.status, step
        assert got.evictions == expected.evictions, step
        assert got.pod_patches == expected.pod_patches, step
        assert got.requeue_at == expected.requeue_at, step
        world.now += timedelta(seconds=seconds)
        world.pods[f"default/{name}"] = world.make_pod({"name": name, **change})
        tally.apply(f"default/{name}", world.pods[f"default/{name}"])


def test_an_unresolvable_replicas_path_keeps_the_status_and_reads_no_pod() -> None:
    """The full computation keeps the status when ``replicasPathList`` does not resolve; the
    tally answers the same without reading its pods, and once the path resolves again hands
    out the costs of the pods that changed in between."""
    raw = workloadspread(subset("s0"), subset("s1"),
                         targetFilter={"replicasPathList": ["spec.scale.replicas"]},
                         status={"subsetStatuses": [{"name": "s0", "replicas": 7}]})
    ws: WorkloadSpread = from_object(raw)
    world = World([(None, None), (None, None)])
    world.ws = ws
    tally = SpreadTally(ws)
    for i, name in enumerate(NAMES):
        change = {"name": name, "version": "aaa", "match": f"s{i % 2}", "phase": "Running",
                  "ready": True, "deleting": False, "cost": "200" if i % 2 == 0 else "100",
                  "created": 0, "unschedulable": None}
        world.pods[f"default/{name}"] = world.make_pod(change)
        tally.apply(f"default/{name}", world.pods[f"default/{name}"])
    before = tally.examined

    def plan() -> tuple[Any, Any]:
        got = tally.plan(ws, workload=world.deploy, latest="aaa", reservations=[],
                         now=world.now, whitelist=WHITELIST, nodes=lambda _: world.nodes)
        return got, expected_plan(world, 300.0)

    got, expected = plan()
    assert got.everything
    assert got.status == expected.status == ws.status
    assert got.updates == expected.deletion_costs == {}
    assert tally.examined == before

    world.deploy = copy.deepcopy(world.deploy)
    world.deploy["spec"]["scale"] = {"replicas": 8}
    stripped = copy.deepcopy(world.pods["default/p3"])
    del stripped["metadata"]["annotations"][COST]
    world.pods["default/p3"] = stripped
    tally.apply("default/p3", stripped)
    got, expected = plan()
    assert not got.everything
    assert got.status == expected.status
    assert got.updates == expected.deletion_costs == {"default/p3": "100"}
