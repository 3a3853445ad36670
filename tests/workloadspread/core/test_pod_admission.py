"""Pod CREATE/DELETE decisions: subset choice, minReplicas, StatefulSet ordinals, injection."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kubesemantics import json_patch
from spreadbus.features.workloadspread.core.admission import (
    admit_create,
    admit_create_for,
    admit_delete,
    admit_delete_for,
)
from spreadbus.features.workloadspread.core.custom_workloads import Whitelist, parse_whitelist
from spreadbus.features.workloadspread.core.model import from_object
from spreadbus.features.workloadspread.core.occupancy import (
    CREATE_TIMEOUT,
    Reservation,
    SubsetLoad,
    loads_from_pods,
    pod_slot,
)
from spreadbus.features.workloadspread.core.subset_choice import (
    choose_subset,
    choose_subset_by_ordinal,
)
from spreadbus.features.workloadspread.core.target import (
    OwnerNotFound,
    governing_workloadspread,
    lookup_in,
    workload_replicas,
)
from tests.workloadspread.core.builders import (
    deployment,
    pod,
    replicaset,
    subset,
    workloadspread,
    zone_term,
)

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
JSON = dict[str, Any]


def loads(**active: int) -> dict[str, SubsetLoad]:
    return {name: SubsetLoad(active=n) for name, n in active.items()}


@pytest.mark.parametrize(
    ("maxes", "active", "expected"),
    [
        ((3, 3, None), {}, "a"),
        ((3, 3, None), {"a": 3}, "b"),
        ((3, 3, None), {"a": 3, "b": 3}, "c"),
        ((3, 3, 3), {"a": 3, "b": 3, "c": 3}, None),
        ((0, 3, None), {}, "b"),
        ((3, 3, None), {"a": 5}, "b"),
    ],
    ids=["first fit", "a full", "a and b full", "all full", "zero capacity", "over capacity"],
)
def test_first_fit_in_spec_order(
    maxes: tuple[int | None, ...], active: dict[str, int], expected: str | None
) -> None:
    ws = from_object(workloadspread(*(subset(n, m) for n, m in zip("abc", maxes, strict=True))))
    assert choose_subset(ws, replicas=10, loads=loads(**active), now=NOW) == expected


def test_percent_limits_round_up_so_34_33_33_of_10_give_4_4_4() -> None:
    ws = from_object(workloadspread(subset("a", "34%"), subset("b", "33%"), subset("c", "33%")))
    picks = []
    current: dict[str, int] = {}
    for _ in range(13):
        chosen = choose_subset(ws, replicas=10, loads=loads(**current), now=NOW)
        picks.append(chosen)
        if chosen is not None:
            current[chosen] = current.get(chosen, 0) + 1
    assert current == {"a": 4, "b": 4, "c": 4}
    assert picks[-1] is None


def test_reservations_in_flight_count_and_expire() -> None:
    ws = from_object(workloadspread(subset("a", 2), subset("b")))
    fresh = SubsetLoad(active=1, creating={"p1": NOW - timedelta(seconds=30)})
    assert choose_subset(ws, replicas=5, loads={"a": fresh}, now=NOW) == "b"
    expired = SubsetLoad(active=1, creating={"p1": NOW - timedelta(seconds=31)})
    assert choose_subset(ws, replicas=5, loads={"a": expired}, now=NOW) == "a"
    deleting = SubsetLoad(active=2, deleting={"p0": NOW - timedelta(seconds=15)})
    assert choose_subset(ws, replicas=5, loads={"a": deleting}, now=NOW) == "a"
    stale_delete = SubsetLoad(active=2, deleting={"p0": NOW - timedelta(seconds=16)})
    assert choose_subset(ws, replicas=5, loads={"a": stale_delete}, now=NOW) == "b"


def test_unschedulable_subsets_are_skipped() -> None:
    raw = workloadspread(
        subset("a", 5),
        subset("b"),
        status={
            "subsetStatuses": [
                {
                    "name": "a",
                    "replicas": 0,
                    "missingReplicas": 5,
                    "conditions": [{"type": "Schedulable", "status": "False"}],
                }
            ]
        },
    )
    assert choose_subset(from_object(raw), replicas=5, loads={}, now=NOW) == "b"


@pytest.mark.parametrize(
    ("active", "expected"),
    [
        ({}, "b"),
        ({"b": 2}, "c"),
        ({"b": 2, "c": 1}, "a"),
        ({"b": 2, "c": 1, "a": 3}, "b"),
        ({"b": 1, "c": 1, "a": 3}, "b"),
        ({"b": 5, "c": 1, "a": 3}, "c"),
    ],
)
def test_min_replicas_fill_first_in_order(active: dict[str, int], expected: str) -> None:
    ws = from_object(
        workloadspread(subset("a", 3), subset("b", 5, minReplicas=2), subset("c", minReplicas=1))
    )
    assert choose_subset(ws, replicas=10, loads=loads(**active), now=NOW) == expected


@pytest.mark.parametrize(
    ("ordinal", "expected"),
    [(0, "a"), (2, "a"), (3, "b"), (7, "b"), (8, "c"), (10_000, "c"), (-1, "a")],
)
def test_statefulset_pods_go_by_ordinal(ordinal: int, expected: str) -> None:
    ws = from_object(
        workloadspread(subset("a", 3), subset("b", 5), subset("c"), kind="StatefulSet")
    )
    assert choose_subset_by_ordinal(ws, ordinal) == expected


def test_statefulset_skips_unschedulable_subsets_without_their_capacity() -> None:
    raw = workloadspread(
        subset("a", 3),
        subset("b", 5),
        subset("c", 2),
        kind="StatefulSet",
        status={
            "subsetStatuses": [
                {"name": "a", "conditions": [{"type": "Schedulable", "status": "False"}]}
            ]
        },
    )
    ws = from_object(raw)
    assert [choose_subset_by_ordinal(ws, i) for i in (0, 4, 5, 6, 7)] == ["b", "b", "c", "c", None]


def _deploy_world(replicas: int = 10) -> tuple[JSON, JSON]:
    d = deployment(replicas=replicas)
    return d, replicaset(d)


def test_owner_chain_reaches_the_deployment_through_its_replicaset() -> None:
    d, rs = _deploy_world()
    ws = from_object(workloadspread(subset("a", 1), subset("b")))
    other = from_object(workloadspread(subset("a"), name="other", target="different"))
    p = pod("web-abc-1", owner=rs)
    lookup = lookup_in([d, rs])
    assert governing_workloadspread(p, [other, ws], lookup=lookup, whitelist=Whitelist()) == ws
    with pytest.raises(OwnerNotFound):
        governing_workloadspread(p, [ws], lookup=lookup_in([d]), whitelist=Whitelist())
    finished = pod("web-abc-2", owner=rs, phase="Succeeded")
    assert governing_workloadspread(finished, [ws], lookup=lookup, whitelist=Whitelist()) is None
    orphan = pod("orphan")
    assert governing_workloadspread(orphan, [ws], lookup=lookup, whitelist=Whitelist()) is None


def test_target_filter_selects_pods_and_sums_replica_paths() -> None:
    tfjob = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "tf", "namespace": "default", "uid": "uid-tf"},
        "spec": {"tfReplicaSpecs": {"PS": {"replicas": 1}, "Worker": {"replicas": 4}}},
    }
    whitelist = parse_whitelist(
        {"workloads": [{"Group": "kubeflow.org", "Kind": "TFJob", "replicasPath": "spec.x"}]}
    )
    raw = workloadspread(
        subset("a", "50%"),
        subset("b", "50%"),
        kind="TFJob",
        api_version="kubeflow.org/v1",
        target="tf",
        targetFilter={
            "selector": {"matchLabels": {"role": "worker"}},
            "replicasPathList": [
                "spec.tfReplicaSpecs.Worker.replicas",
                "spec.tfReplicaSpecs.PS.replicas",
            ],
        },
    )
    ws = from_object(raw)
    assert workload_replicas(ws, tfjob, whitelist=whitelist) == 5
    worker = pod("tf-worker-0", owner=tfjob, labels={"role": "worker"})
    ps = pod("tf-ps-0", owner=tfjob, labels={"role": "ps"})
    lookup = lookup_in([tfjob])
    assert governing_workloadspread(worker, [ws], lookup=lookup, whitelist=whitelist) == ws
    assert governing_workloadspread(ps, [ws], lookup=lookup, whitelist=whitelist) is None
    no_selector = from_object(
        {**raw, "spec": {**raw["spec"], "targetFilter": {"replicasPathList": []}}}
    )
    assert (
        governing_workloadspread(worker, [no_selector], lookup=lookup, whitelist=whitelist) is None
    )


def test_injection_ands_required_terms_and_appends_the_rest() -> None:
    _, rs = _deploy_world()
    raw = workloadspread(
        subset(
            "a",
            5,
            tolerations=[{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
            preferredNodeSelectorTerms=[{"weight": 10, "preference": zone_term("x")}],
            patch={
                "metadata": {"labels": {"deploy/zone": "a"}},
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "env": [{"name": "ZONE", "value": "a"}],
                            "resources": {"limits": {"cpu": "2"}},
                        }
                    ]
                },
            },
        ),
        subset("b"),
    )
    ws = from_object(raw)
    p = pod("web-abc-1", owner=rs)
    p["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "arch", "operator": "In", "values": ["amd64"]}]},
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
                ]
            }
        }
    }
    decision = admit_create_for(ws, p, replicas=10, loads={}, now=NOW, generated_uid="u-1")
    assert decision.allowed
    assert decision.subset == "a"
    out = decision.pod
    terms = out["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    zone_expr = zone_term("a")["matchExpressions"][0]
    assert terms[0]["matchExpressions"] == [
        {"key": "arch", "operator": "In", "values": ["amd64"]},
        zone_expr,
    ]
    assert terms[1]["matchExpressions"] == [zone_expr]
    assert out["spec"]["tolerations"] == [
        {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}
    ]
    assert out["spec"]["affinity"]["nodeAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"
    ] == [{"weight": 10, "preference": zone_term("x")}]
    assert out["metadata"]["labels"]["deploy/zone"] == "a"
    assert out["spec"]["containers"] == [
        {
            "name": "main",
            "image": "nginx",
            "env": [{"name": "ZONE", "value": "a"}],
            "resources": {"limits": {"cpu": "2"}},
        }
    ]
    assert json.loads(out["metadata"]["annotations"]["apps.kruise.io/matched-workloadspread"]) == {
        "name": "ws",
        "subset": "a",
    }
    assert json_patch.apply(p, decision.patch) == out
    assert decision.reservation == Reservation(
        "default/ws", "abc", "a", "web-abc-1", "creating", NOW
    )


def test_a_pod_without_a_name_is_reserved_under_a_generated_uid() -> None:
    _, rs = _deploy_world()
    ws = from_object(workloadspread(subset("a", 5), subset("b")))
    p = pod("", owner=rs)
    decision = admit_create_for(ws, p, replicas=10, loads={}, now=NOW, generated_uid="u-42")
    assert decision.reservation is not None
    assert decision.reservation.pod == "u-42"
    annotation = json.loads(
        decision.pod["metadata"]["annotations"]["apps.kruise.io/matched-workloadspread"]
    )
    assert annotation == {"name": "ws", "subset": "a", "uid": "u-42"}


def test_empty_node_affinity_is_left_even_without_node_constraints() -> None:
    ws = from_object(workloadspread({"name": "only", "maxReplicas": 3}, {"name": "rest"}))
    decision = admit_create_for(ws, pod("p"), replicas=3, loads={}, now=NOW, generated_uid="u")
    assert decision.pod["spec"]["affinity"] == {"nodeAffinity": {}}


def test_a_patch_that_changes_priority_class_clears_priority() -> None:
    ws = from_object(workloadspread(subset("a", patch={"spec": {"priorityClassName": "high"}})))
    p = pod("p")
    p["spec"]["priority"] = 0
    decision = admit_create_for(ws, p, replicas=3, loads={}, now=NOW, generated_uid="u")
    assert decision.pod["spec"]["priorityClassName"] == "high"
    assert "priority" not in decision.pod["spec"]
    same = from_object(workloadspread(subset("a", patch={"metadata": {"labels": {"x": "y"}}})))
    kept = admit_create_for(same, p, replicas=3, loads={}, now=NOW, generated_uid="u")
    assert kept.pod["spec"]["priority"] == 0


def test_no_room_anywhere_admits_the_pod_untouched() -> None:
    ws = from_object(workloadspread(subset("a", 1), subset("b", 1)))
    decision = admit_create_for(
        ws, pod("p"), replicas=2, loads=loads(a=1, b=1), now=NOW, generated_uid="u"
    )
    assert decision.allowed
    assert decision.subset is None
    assert decision.patch == []


def test_readmission_of_a_reserved_name_returns_the_same_subset_without_a_new_reservation() -> None:
    ws = from_object(workloadspread(subset("a", 1), subset("b", 1)))
    held = {"a": SubsetLoad(), "b": SubsetLoad(creating={"p": NOW})}
    decision = admit_create_for(ws, pod("p"), replicas=2, loads=held, now=NOW, generated_uid="u")
    assert decision.subset == "b"
    assert decision.reservation is None


def test_unlimited_subsets_and_statefulsets_need_no_reservation() -> None:
    single = from_object(workloadspread(subset("a")))
    assert (
        admit_create_for(
            single, pod("p"), replicas=1, loads={}, now=NOW, generated_uid="u"
        ).reservation
        is None
    )
    sts = from_object(workloadspread(subset("a", 2), subset("b"), kind="StatefulSet"))
    decision = admit_create_for(sts, pod("db-3"), replicas=5, loads={}, now=NOW, generated_uid="u")
    assert decision.subset == "b"
    assert decision.reservation is None


def test_missing_owner_denies_the_create() -> None:
    _, rs = _deploy_world()
    ws = from_object(workloadspread(subset("a", 1), subset("b")))
    decision = admit_create(
        pod("web-abc-1", owner=rs),
        [ws],
        lookup=lookup_in([]),
        whitelist=Whitelist(),
        replicas_of=lambda _: 10,
        loads_of=lambda _ws, _v: {},
        now=NOW,
        generated_uid="u",
    )
    assert not decision.allowed
    assert decision.message == "ReplicaSet.apps default/web-abc not found"


def test_delete_reserves_a_deleting_slot_once() -> None:
    _, rs = _deploy_world()
    ws = from_object(workloadspread(subset("a", 2), subset("b")))
    p = pod("web-abc-1", owner=rs, ws="ws", subset_name="a")
    decision = admit_delete(p, [ws], loads_of=lambda _ws, _v: {}, now=NOW)
    assert decision.allowed
    assert decision.reservation == Reservation(
        "default/ws", "abc", "a", "web-abc-1", "deleting", NOW
    )
    again = admit_delete(
        p,
        [ws],
        loads_of=lambda _ws, _v: {"a": SubsetLoad(active=1, deleting={"web-abc-1": NOW})},
        now=NOW,
    )
    assert again.allowed
    assert again.reservation is None
    unlimited = pod("web-abc-2", owner=rs, ws="ws", subset_name="b")
    assert admit_delete(unlimited, [ws], loads_of=lambda _ws, _v: {}, now=NOW).reservation is None


def test_an_eviction_is_allowed_and_frees_no_slot() -> None:
    _, rs = _deploy_world()
    ws = from_object(workloadspread(subset("a", 2), subset("b")))
    p = pod("web-abc-1", owner=rs, ws="ws", subset_name="a")
    decision = admit_delete(p, [ws], loads_of=lambda _ws, _v: {}, now=NOW, eviction=True)
    assert decision.allowed
    assert (decision.workloadspread, decision.subset) == ("default/ws", "a")
    assert decision.reservation is None


def test_annotation_keys_are_read_case_insensitively() -> None:
    ws = from_object(workloadspread(subset("a", 2), subset("b")))
    p = pod("p")
    p["metadata"]["annotations"] = {
        "apps.kruise.io/matched-workloadspread": '{"Name":"ws","Subset":"a"}'
    }
    assert pod_slot(ws, p) == ("versionIgnored", "a")


def test_loads_recount_drops_reservations_of_pods_already_seen() -> None:
    _, rs = _deploy_world()
    ws = from_object(workloadspread(subset("a", 3), subset("b")))
    seen = pod("web-abc-1", owner=rs, ws="ws", subset_name="a")
    reservations = [
        Reservation("default/ws", "abc", "a", "web-abc-1", "creating", NOW),
        Reservation("default/ws", "abc", "a", "web-abc-2", "creating", NOW),
        Reservation("default/ws", "abc", "a", "gone", "deleting", NOW),
    ]
    result = loads_from_pods(ws, [seen], reservations)
    assert result == {"abc": {"a": SubsetLoad(active=1, creating={"web-abc-2": NOW})}}


# steps around the 30 s creating and 15 s deleting deadlines (an entry exactly at one still holds)
TICKS = (0, 1, 5, 15, 16, 29, 30, 31, 45)
REMOVALS = ["delete", "delete-refused", "evict", "evict-refused", "observe"]


@settings(max_examples=300, deadline=None)
@example(  # a late pod on top of the admission its expired reservation made room for
    maxes=[1],
    minimums=[0, 0, 0, 0],
    ops=[("create", 0), ("tick", TICKS.index(31)), ("create", 0), ("confirm", 0), ("confirm", 0)],
)
@example(  # an eviction a PodDisruptionBudget refuses after admission frees nothing
    maxes=[1],
    minimums=[0, 0, 0, 0],
    ops=[("create", 0), ("confirm", 0), ("evict-refused", 0), ("create", 0), ("confirm", 0)],
)
@example(  # a DELETE refused after admission lets one replacement in, counted on top
    maxes=[1],
    minimums=[0, 0, 0, 0],
    ops=[("create", 0), ("confirm", 0), ("delete-refused", 0), ("create", 0), ("confirm", 0)],
)
@example(  # a deletion carried out frees the slot before the pod is seen terminating
    maxes=[1],
    minimums=[0, 0, 0, 0],
    ops=[("create", 0), ("confirm", 0), ("delete", 0), ("create", 0), ("confirm", 0)],
)
@given(
    maxes=st.lists(st.one_of(st.none(), st.integers(0, 6)), min_size=1, max_size=4),
    minimums=st.lists(st.integers(0, 6), min_size=4, max_size=4),
    ops=st.lists(
        st.tuples(st.sampled_from(["create", "confirm", "fail", "tick", *REMOVALS]),
                  st.integers(0, 50)),
        max_size=80,
    ),
)
def test_only_late_pods_and_refused_deletes_can_overfill_a_subset(
    maxes: list[int | None], minimums: list[int], ops: list[tuple[str, int]]
) -> None:
    """A subset holds at most its limit plus late pods and plain DELETEs refused after admission.

    As in Kruise, a creating reservation lives 30 s; after that the admission is taken to have
    failed (Kruise's ``CreatePodFailed``) and its slot is offered again, so a pod that does appear
    later is counted on top. Kruise accepts this rather than hold slots forever for creates that
    did fail; the planner's deletion costs then put such overflow first in line on scale-down.

    Removals go through the admission too. A DELETE frees its pod's slot for 15 s (the API server
    marks the pod terminating right after admission; the view sees it later): carried out, the
    replacement takes a slot the pod no longer holds; refused after admission (another webhook
    denies it, a precondition fails), the pod stays and one replacement may be in beside it, so
    each refused DELETE can add one pod. An eviction frees nothing at admission, since the
    PodDisruptionBudget is checked after it: refused or carried out, it adds nothing; the slot
    frees once the pod is observed terminating. Every other pod was admitted against a count that
    included it.
    """
    subsets = []
    for i, m in enumerate(maxes):
        extra = {} if m is not None and minimums[i] > m else {"minReplicas": minimums[i]}
        subsets.append(subset(f"s{i}", m, **extra))
    ws = from_object(workloadspread(*subsets))
    limits = {f"s{i}": m for i, m in enumerate(maxes)}
    pending: dict[str, tuple[str, datetime | None]] = {}  # admitted, not seen: subset, reserved at
    appeared: dict[str, str] = {}  # pods the view holds as active -> subset
    terminating: set[str] = set()  # being deleted, not yet seen so by the view
    late: set[str] = set()  # appeared after their reservation expired
    refused_deletes: dict[str, int] = {}  # subset -> DELETEs that reserved and were then refused
    reservations: list[Reservation] = []
    now = NOW
    counter = 0

    def expired(reserved_at: datetime | None) -> bool:
        return reserved_at is not None and reserved_at + CREATE_TIMEOUT < now

    def current_loads() -> dict[str, SubsetLoad]:
        pods = [pod(p, ws="ws", subset_name=s) for p, s in appeared.items()]
        return loads_from_pods(ws, pods, reservations).get("versionIgnored", {})

    for op, n in ops:
        running = sorted(set(appeared) - terminating)
        if op == "tick":
            now += timedelta(seconds=TICKS[n % len(TICKS)])
        elif op == "create":
            counter += 1
            name = f"p{counter}"
            decision = admit_create_for(
                ws, pod(name), replicas=10, loads=current_loads(), now=now, generated_uid="u"
            )
            if decision.subset is not None:
                reserved_at = None
                if decision.reservation is not None:
                    reservations.append(decision.reservation)
                    reserved_at = decision.reservation.at
                pending[name] = (decision.subset, reserved_at)
        elif op in ("confirm", "fail") and pending:
            name = sorted(pending)[n % len(pending)]
            subset_name, reserved_at = pending.pop(name)
            if op == "confirm":
                appeared[name] = subset_name
                if expired(reserved_at):
                    late.add(name)
        elif op in ("delete", "delete-refused", "evict", "evict-refused") and running:
            name = running[n % len(running)]
            removal = admit_delete_for(
                ws,
                pod(name, ws="ws", subset_name=appeared[name]),
                loads=current_loads(),
                now=now,
                eviction=op.startswith("evict"),
            )
            assert removal.allowed
            if removal.reservation is not None:
                reservations.append(removal.reservation)
                if op == "delete-refused":
                    s = appeared[name]
                    refused_deletes[s] = refused_deletes.get(s, 0) + 1
            if not op.endswith("refused"):
                terminating.add(name)
        elif op == "observe" and terminating:
            name = sorted(terminating)[n % len(terminating)]
            terminating.discard(name)
            del appeared[name]
            late.discard(name)
        occupied: dict[str, int] = {}
        beyond: dict[str, int] = dict(refused_deletes)  # pods the admission no longer counts
        for name, s in appeared.items():
            if name in terminating:
                continue
            occupied[s] = occupied.get(s, 0) + 1
            beyond[s] = beyond.get(s, 0) + (name in late)
        for s, reserved_at in pending.values():
            occupied[s] = occupied.get(s, 0) + 1
            beyond[s] = beyond.get(s, 0) + expired(reserved_at)
        for s, count in occupied.items():
            limit = limits[s]
            assert limit is None or count <= limit + beyond[s], (s, count, limit, beyond[s])


def test_a_pod_that_appears_after_its_reservation_expired_is_counted_on_top() -> None:
    ws = from_object(workloadspread(subset("a", 1), subset("b")))
    first = admit_create_for(ws, pod("p1"), replicas=2, loads={}, now=NOW, generated_uid="u")
    assert first.subset == "a"
    assert first.reservation is not None
    reservations = [first.reservation]
    at_deadline = NOW + CREATE_TIMEOUT
    current = loads_from_pods(ws, [], reservations).get("versionIgnored", {})
    held = admit_create_for(
        ws, pod("p2"), replicas=2, loads=current, now=at_deadline, generated_uid="u"
    )
    assert held.subset == "b", "the reservation still holds at its deadline"
    after = at_deadline + timedelta(seconds=1)
    freed = admit_create_for(ws, pod("p3"), replicas=2, loads=current, now=after, generated_uid="u")
    assert freed.subset == "a", "an expired reservation frees its slot"
    assert freed.reservation is not None
    reservations.append(freed.reservation)
    late = [pod("p1", ws="ws", subset_name="a")]
    recount = loads_from_pods(ws, late, reservations)["versionIgnored"]["a"]
    assert recount.active == 1
    assert recount.occupancy(after) == 2, "the late pod and the new admission both count"
    full = admit_create_for(
        ws,
        pod("p4"),
        replicas=2,
        loads=loads_from_pods(ws, late, reservations).get("versionIgnored", {}),
        now=after,
        generated_uid="u",
    )
    assert full.subset == "b"


def test_min_replicas_sequence_described_in_the_docs() -> None:
    ws = from_object(
        workloadspread(subset("a", 3), subset("b", minReplicas=2), subset("c", minReplicas=1))
    )
    current: dict[str, int] = {}
    order = []
    for _ in range(7):
        chosen = choose_subset(ws, replicas=7, loads=loads(**current), now=NOW)
        assert chosen is not None
        order.append(chosen)
        current[chosen] = current.get(chosen, 0) + 1
    assert order == ["b", "b", "c", "a", "a", "a", "b"]
