"""A pod as a webhook replica keeps it reads, for every admission decision, as the whole pod.

The view keeps only a few fields of each pod (:class:`KeptPod`) and hands decisions the object
they make. Over random pods, the realistic ones of the histories and ones with fields of the
wrong type, every reading a decision makes of the kept pod equals the reading of the whole one:
the counting rule's occupant (under the default and other versioned kinds), the deletion path's
governing spread and deleting reservation.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.features.workloadspread.admission.kept_pod import KeptPod
from spreadbus.features.workloadspread.core import pod_state
from spreadbus.features.workloadspread.core.admission import admit_delete_for, spread_for_deletion
from spreadbus.features.workloadspread.core.model import from_object
from spreadbus.features.workloadspread.core.occupancy import occupant
from tests.workloadspread.core.pod_histories import NAMES, SPREADS, SUBSETS, pod_fields, pod_object

NOW = datetime(2026, 1, 1, tzinfo=UTC)
MATCHED = "apps.kruise.io/matched-workloadspread"
odd = st.one_of(st.none(), st.booleans(), st.integers(-1, 1), st.just(""), st.just([]),
                st.just({}), st.sampled_from(("Pod", "Deployment", "Failed", "x")))


@st.composite
def odd_pods(draw: st.DrawFn) -> dict[str, Any]:
    """A realistic pod with some of what the readings look at replaced by a value of any type."""
    pod = pod_object(draw(st.sampled_from(NAMES)), draw(pod_fields("a")))
    metadata = pod["metadata"]
    if draw(st.booleans()):
        pod["kind"] = draw(odd)
    if draw(st.booleans()):
        metadata["deletionTimestamp"] = draw(odd)
    if draw(st.booleans()):
        metadata["labels"] = draw(st.one_of(odd, st.dictionaries(
            st.sampled_from(("pod-template-hash", "controller-revision-hash", "app")),
            st.one_of(odd, st.sampled_from(("v1", "db-7f"))))))
    if draw(st.booleans()):
        metadata["annotations"] = draw(st.one_of(odd, st.dictionaries(
            st.just(MATCHED), st.one_of(odd, st.just('{"Name":"ws","SUBSET":"zone-a"}')))))
    if draw(st.booleans()):
        reference = st.fixed_dictionaries({
            "kind": st.one_of(odd, st.sampled_from(("ReplicaSet", "deployment", "CloneSet"))),
            "controller": st.one_of(odd, st.just(True)),
        })
        metadata["ownerReferences"] = draw(
            st.one_of(odd, st.lists(st.one_of(odd, reference), max_size=3)))
    if draw(st.booleans()):
        pod["status"] = draw(st.one_of(odd, st.fixed_dictionaries({"phase": odd})))
    if draw(st.booleans()):
        metadata["namespace"] = draw(st.sampled_from(("", "default", "other")))
    return pod


pods = st.one_of(st.builds(pod_object, st.sampled_from(NAMES), pod_fields("a")), odd_pods())
spreads = st.builds(
    lambda name, target, subsets: from_object({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": target, "name": "web"},
                 "subsets": [{"name": s, "maxReplicas": 2} for s in subsets]},
    }),
    st.sampled_from(SPREADS),
    st.sampled_from(("Deployment", "StatefulSet")),
    st.lists(st.sampled_from(SUBSETS), min_size=1, unique=True),
)


def kept(pod: dict[str, Any]) -> dict[str, Any]:
    metadata = pod["metadata"]
    namespace = metadata.get("namespace") or ""
    return KeptPod.of(pod, metadata["name"], namespace).to_object()


@settings(max_examples=500, deadline=None)
@given(pods, st.sampled_from((pod_state.DEFAULT_VERSIONED_KINDS,
                              frozenset({"pod", "cloneset", "replicaset"}))))
def test_the_counting_rule_reads_a_kept_pod_as_the_whole_pod(
    pod: dict[str, Any], versioned: frozenset[str]
) -> None:
    assert occupant(kept(pod), versioned) == occupant(pod, versioned)


@settings(max_examples=300, deadline=None)
@given(pods, st.lists(spreads, max_size=2))
def test_a_deletion_is_decided_on_a_kept_pod_as_on_the_whole_pod(
    pod: dict[str, Any], candidates: list[Any]
) -> None:
    short = kept(pod)
    governing = spread_for_deletion(pod, candidates)
    assert spread_for_deletion(short, candidates) == governing
    if governing is not None:
        whole = admit_delete_for(governing, pod, loads={}, now=NOW)
        from_kept = admit_delete_for(governing, short, loads={}, now=NOW)
        assert (from_kept.subset, from_kept.reservation) == (whole.subset, whole.reservation)


def test_pods_kept_alike_share_their_owner_and_strings() -> None:
    first = pod_object("a", {"owner": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                        "name": "web-1", "uid": "u1", "controller": True}],
                             "labels": {"pod-template-hash": "v1"}, "phase": "Running"})
    second = pod_object("b", {"owner": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                         "name": "web-1", "uid": "u1", "controller": True}],
                              "labels": {"pod-template-hash": "v" + "1"}, "phase": "Run" + "ning"})
    a, b = KeptPod.of(first, "a", "default"), KeptPod.of(second, "b", "default")
    assert a.owner is b.owner
    assert a.template_hash is b.template_hash
    assert a.phase is b.phase
