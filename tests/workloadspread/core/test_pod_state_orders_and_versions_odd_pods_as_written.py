"""The pod readers the scale-in order and the versioned status rest on take any JSON a pod may
carry (odd types, missing parts, repeated timestamps) exactly as the rules read in their plainest
form: Kubernetes' ``ActivePods.Less`` fields one by one, and ``GetPodVersion`` from the labels
that are strings.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesemantics.timestamps import parse_time
from spreadbus.features.workloadspread.core import pod_state
from spreadbus.features.workloadspread.core.model import VERSION_IGNORED

STAMPS = ["2026-01-01T12:00:00Z", "2026-01-01T12:00:01Z", "2026-01-01T12:00:00+02:00",
          "2026-01-01T12:00:00", "not a time", ""]
odd = st.one_of(st.none(), st.integers(-3, 3), st.booleans(), st.sampled_from(STAMPS),
                st.just([]), st.just({}))
stamps = st.one_of(st.sampled_from(STAMPS), odd)


def maybe(draw: st.DrawFn, into: dict[str, Any], key: str, values: st.SearchStrategy[Any]) -> None:
    if draw(st.booleans()):
        into[key] = draw(values)


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any]:
    conditions = st.lists(st.one_of(
        st.fixed_dictionaries({"type": st.sampled_from(["Ready", "PodScheduled", 1]),
                               "status": st.sampled_from(["True", "False", True])},
                              optional={"lastTransitionTime": stamps}),
        odd), max_size=3)
    statuses = st.lists(st.one_of(
        st.fixed_dictionaries({}, optional={"restartCount": st.one_of(
            st.integers(-4, 4), st.booleans(), st.just("3"), st.just(2.5))}),
        odd), max_size=3)
    labels = st.dictionaries(st.sampled_from(["pod-template-hash", "controller-revision-hash",
                                              "app"]),
                             st.one_of(st.sampled_from(["h1", "web-7f9c", "a-b-c"]), odd))
    owners = st.lists(st.fixed_dictionaries(
        {"kind": st.sampled_from(["ReplicaSet", "StatefulSet", "Deployment", 3]),
         "controller": st.sampled_from([True, False, 1])}), max_size=2)
    metadata: dict[str, Any] = {}
    maybe(draw, metadata, "creationTimestamp", stamps)
    maybe(draw, metadata, "labels", st.one_of(labels, odd))
    maybe(draw, metadata, "ownerReferences", st.one_of(owners, odd))
    status: dict[str, Any] = {}
    maybe(draw, status, "phase", st.one_of(st.sampled_from(["Pending", "Running", "Unknown"]),
                                           odd))
    maybe(draw, status, "conditions", st.one_of(conditions, odd))
    maybe(draw, status, "containerStatuses", st.one_of(statuses, odd))
    pod: dict[str, Any] = {}
    maybe(draw, pod, "kind", st.sampled_from(["Pod", "ReplicaSet", 5]))
    maybe(draw, pod, "metadata", st.one_of(st.just(metadata), odd))
    maybe(draw, pod, "spec", st.one_of(st.fixed_dictionaries({}, optional={
        "nodeName": st.one_of(st.sampled_from(["n1", ""]), odd)}), odd))
    maybe(draw, pod, "status", st.one_of(st.just(status), odd))
    return pod


def part(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None


def later_first(value: Any) -> tuple[int, float]:
    parsed = parse_time(value)
    return (0, 0.0) if parsed is None else (1, -parsed.timestamp())


def plain_order(pod: dict[str, Any]) -> tuple[Any, ...]:
    status = part(pod, "status")
    conditions = part(status, "conditions")
    ready = next((c for c in (conditions if isinstance(conditions, list) else [])
                  if isinstance(c, dict) and c.get("type") == "Ready"
                  and c.get("status") == "True"), None)
    statuses = part(status, "containerStatuses")
    counts = [part(s, "restartCount") for s in (statuses if isinstance(statuses, list) else [])
              if isinstance(s, dict)]
    node = part(part(pod, "spec"), "nodeName")
    phase = part(status, "phase")
    return (
        1 if isinstance(node, str) and node else 0,
        {"Pending": 0, "Unknown": 1, "Running": 2}.get(phase if isinstance(phase, str) else "",
                                                        0),
        0 if ready is None else 1,
        (0, 0.0) if ready is None else later_first(ready.get("lastTransitionTime")),
        -max((c for c in counts if isinstance(c, int)), default=0),
        later_first(part(part(pod, "metadata"), "creationTimestamp")),
    )


def plain_version(pod: dict[str, Any]) -> str:
    metadata = part(pod, "metadata")
    refs = part(metadata, "ownerReferences")
    owner = next((r for r in (refs if isinstance(refs, list) else [])
                  if isinstance(r, dict) and r.get("controller") is True), None)
    kinds = [pod.get("kind"), owner.get("kind") if owner is not None else None]
    if not any(isinstance(k, str) and k.lower() in ("deployment", "replicaset") for k in kinds):
        return VERSION_IGNORED
    labels = part(metadata, "labels")
    strings = {k: v for k, v in (labels.items() if isinstance(labels, dict) else [])
               if isinstance(v, str)}
    if "pod-template-hash" in strings:
        return strings["pod-template-hash"]
    if "controller-revision-hash" in strings:
        return strings["controller-revision-hash"].split("-")[-1]
    return VERSION_IGNORED


@settings(max_examples=400, deadline=None)
@given(pods())
def test_the_scale_in_order_key_reads_each_field_as_written(pod: dict[str, Any]) -> None:
    assert pod_state.deletion_order_key(pod) == plain_order(pod)
    assert pod_state.deletion_order_key(pod) == plain_order(pod)  # memoised reads agree


@settings(max_examples=400, deadline=None)
@given(pods())
def test_the_version_is_the_first_hash_label_that_is_a_string(pod: dict[str, Any]) -> None:
    assert pod_state.version(pod) == plain_version(pod)
