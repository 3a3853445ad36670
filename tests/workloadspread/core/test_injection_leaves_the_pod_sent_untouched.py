"""Injection builds its result copy-on-write: the pod sent is never changed, the answer is not.

The result shares what injection leaves alone with the input pod, so these tests check that no
nested object of the input (affinity terms, tolerations, containers, annotations) is modified,
that nothing from the WorkloadSpread is aliased into the result, and that the pod and RFC 6902
patch are exactly what injecting into a private deep copy of the pod produces. They go through
:func:`admit_create_for`, as the webhook and ``spreadbus admit`` do, with one subset and no
deletion cost, so the decision's pod and patch are injection's alone.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesemantics import json_patch, strategic_merge
from spreadbus.features.workloadspread.core.admission import AdmissionDecision, admit_create_for
from spreadbus.features.workloadspread.core.injection import InjectionError
from spreadbus.features.workloadspread.core.model import MATCHED_ANNOTATION, Subset, WorkloadSpread
from spreadbus.features.workloadspread.core.pod_state import Matched

JSON = dict[str, Any]
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _admitted(pod: Mapping[str, Any], subset: Subset) -> AdmissionDecision:
    """The webhook's answer for ``pod`` under a WorkloadSpread ``ws`` of just ``subset``."""
    ws = WorkloadSpread(namespace="default", name="ws", subsets=(subset,))
    decision = admit_create_for(ws, pod, replicas=10, loads={}, now=NOW, generated_uid="")
    assert decision.subset == subset.name
    return decision


def _expression(key: str, value: str) -> JSON:
    return {"key": key, "operator": "In", "values": [value]}


def _rich_pod() -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-1",
            "namespace": "default",
            "labels": {"app": "web"},
            "annotations": {"keep": "me"},
        },
        "spec": {
            "priorityClassName": "normal",
            "priority": 0,
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "affinity": {
                "nodeAffinity": {
                    REQUIRED: {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [_expression("arch", "amd64")]},
                            {"matchFields": [_expression("metadata.name", "n1")]},
                        ]
                    },
                    PREFERRED: [{"weight": 1, "preference": {"matchExpressions": []}}],
                },
                "podAntiAffinity": {"preferred": [{"weight": 5}]},
            },
            "containers": [
                {
                    "name": "main",
                    "image": "web:1",
                    "env": [{"name": "A", "value": "1"}],
                    "resources": {"limits": {"cpu": "1"}},
                },
                {"name": "sidecar", "image": "proxy:1"},
            ],
        },
    }


def _rich_subset() -> Subset:
    return Subset(
        name="zone-a",
        required_node_selector={
            "matchExpressions": [_expression("zone", "a")],
            "matchFields": [_expression("metadata.name", "n2")],
        },
        preferred_node_selector=({"weight": 10, "preference": {"matchExpressions": []}},),
        tolerations=({"key": "spot", "operator": "Exists", "effect": "NoSchedule"},),
        max_replicas=3,
        patch={
            "metadata": {"labels": {"zone": "a"}, "annotations": {"patched": "yes"}},
            "spec": {
                "priorityClassName": "high",
                "containers": [{"name": "main", "resources": {"limits": {"cpu": "2"}}}],
            },
        },
    )


def test_injecting_a_subset_changes_no_nested_object_of_the_pod_sent() -> None:
    pod = _rich_pod()
    before = copy.deepcopy(pod)
    subset = _rich_subset()
    subset_before = copy.deepcopy(subset)

    decision = _admitted(pod, subset)
    injected, ops = decision.pod, decision.patch

    assert pod == before
    assert subset == subset_before
    assert injected != before, "the subset was injected"
    terms = injected["spec"]["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][-1] == _expression("zone", "a")
    assert injected["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "2"}}
    assert "priority" not in injected["spec"]
    assert injected["metadata"]["annotations"]["keep"] == "me"
    assert json_patch.apply(pod, ops) == injected
    assert pod == before


def test_the_result_aliases_nothing_of_the_workloadspread() -> None:
    subset = _rich_subset()
    injected = _admitted(_rich_pod(), subset).pod
    assert subset.required_node_selector is not None
    assert subset.patch is not None
    spec = injected["spec"]
    assert spec["tolerations"][-1] is not subset.tolerations[0]
    preferred = spec["affinity"]["nodeAffinity"][PREFERRED]
    assert preferred[-1] is not subset.preferred_node_selector[0]
    terms = spec["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"]
    added = subset.required_node_selector["matchExpressions"][0]
    assert all(term["matchExpressions"][-1] is not added for term in terms)
    patched = subset.patch["spec"]["containers"][0]["resources"]
    assert spec["containers"][0]["resources"] is not patched


# --- The copy-on-write result equals injecting into a private deep copy --------------------


def _reference(pod: Mapping[str, Any], subset: Subset, ws_name: str) -> tuple[JSON, list[JSON]]:
    """Injection as it was first written: deep-copy the pod, then change the copy in place."""
    out: JSON = copy.deepcopy(dict(pod))

    def obj(parent: JSON, key: str) -> JSON:
        if not isinstance(parent.get(key), dict):
            parent[key] = {}
        value: JSON = parent[key]
        return value

    spec = obj(out, "spec")
    if subset.tolerations:
        existing = spec.get("tolerations")
        spec["tolerations"] = [*(existing if isinstance(existing, list) else [])]
        spec["tolerations"] += copy.deepcopy(list(subset.tolerations))
    node_affinity = obj(obj(spec, "affinity"), "nodeAffinity")
    if subset.preferred_node_selector:
        existing = node_affinity.get(PREFERRED)
        node_affinity[PREFERRED] = [*(existing if isinstance(existing, list) else [])]
        node_affinity[PREFERRED] += copy.deepcopy(list(subset.preferred_node_selector))
    selector = subset.required_node_selector
    if selector is not None:
        required = obj(node_affinity, REQUIRED)
        terms = required.get("nodeSelectorTerms")
        if not isinstance(terms, list) or not terms:
            required["nodeSelectorTerms"] = [copy.deepcopy(selector)]
        else:
            for term in terms:
                for name in ("matchExpressions", "matchFields"):
                    extra = selector.get(name) or []
                    if isinstance(term, dict) and extra:
                        current = term.get(name)
                        term[name] = [*(current if isinstance(current, list) else [])]
                        term[name] += copy.deepcopy(extra)
    if subset.patch is not None:
        before_class = spec.get("priorityClassName")
        try:
            merged = strategic_merge.apply(out, subset.patch, strategic_merge.meta_for_kind("Pod"))
        except (strategic_merge.PatchError, TypeError, ValueError, AttributeError) as exc:
            raise InjectionError(f"failed to merge patch: {exc}") from exc
        if not isinstance(merged, dict):
            raise InjectionError("failed to merge patch: the patch deleted the pod")
        out = copy.deepcopy(merged)
        if obj(out, "spec").get("priorityClassName") != before_class:
            obj(out, "spec").pop("priority", None)
    annotation = Matched(name=ws_name, subset=subset.name).to_annotation()
    obj(obj(out, "metadata"), "annotations")[MATCHED_ANNOTATION] = annotation
    return out, json_patch.diff(copy.deepcopy(dict(pod)), copy.deepcopy(out))


names = st.sampled_from(["a", "b", "zone", "x/y", "t~1"])
odd = st.sampled_from([None, True, 3, "text"])
"""A value where injection expects an object or a list: it is replaced, as upstream does."""
expressions = st.builds(_expression, names, names)
terms = st.fixed_dictionaries(
    {},
    optional={
        "matchExpressions": st.lists(expressions, max_size=2),
        "matchFields": st.lists(expressions, max_size=2),
    },
)
tolerations = st.fixed_dictionaries({"key": names, "operator": st.just("Exists")})
containers = st.lists(
    st.fixed_dictionaries(
        {"name": names},
        optional={
            "image": names,
            "env": st.lists(st.fixed_dictionaries({"name": names, "value": names}), max_size=2),
            "resources": st.fixed_dictionaries(
                {}, optional={"limits": st.dictionaries(names, names)}
            ),
        },
    ),
    max_size=3,
    unique_by=lambda c: str(c["name"]),
)


def mostly(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """The strategy, or one time in four a value of the wrong type."""
    return st.integers(0, 3).flatmap(lambda i: odd if i == 0 else strategy)


node_affinities = st.fixed_dictionaries(
    {
        REQUIRED: mostly(
            st.fixed_dictionaries(
                {"nodeSelectorTerms": mostly(st.lists(mostly(terms), max_size=3))}
            )
        )
    },
    optional={
        PREFERRED: st.lists(st.fixed_dictionaries({"weight": st.integers(1, 5)}), max_size=2),
    },
)
specs = mostly(
    st.fixed_dictionaries(
        {
            "affinity": mostly(
                st.fixed_dictionaries(
                    {"nodeAffinity": mostly(node_affinities)},
                    optional={"podAntiAffinity": st.dictionaries(names, names, max_size=2)},
                )
            )
        },
        optional={
            "containers": containers,
            "tolerations": mostly(st.lists(tolerations, max_size=2)),
            "priorityClassName": names,
            "priority": st.integers(0, 3),
        },
    )
)
pods = st.fixed_dictionaries(
    {"kind": st.just("Pod"), "spec": specs},
    optional={
        "metadata": st.fixed_dictionaries(
            {},
            optional={
                "name": names,
                "labels": st.dictionaries(names, names, max_size=2),
                "annotations": st.dictionaries(names, names, max_size=2) | odd,
            },
        )
        | odd,
    },
)
patches = st.none() | st.fixed_dictionaries(
    {},
    optional={
        "metadata": st.fixed_dictionaries(
            {},
            optional={
                "labels": st.dictionaries(names, names | st.none(), max_size=2),
                "annotations": st.dictionaries(names, names, max_size=2),
            },
        ),
        "spec": st.fixed_dictionaries(
            {},
            optional={
                "containers": containers,
                "priorityClassName": names,
                "tolerations": st.lists(tolerations, max_size=1),
            },
        )
        | st.just({"$patch": "delete"}),
        "$patch": st.sampled_from(["merge", "bogus"]),
    },
)
subsets = st.builds(
    Subset,
    name=names,
    required_node_selector=st.one_of(st.none(), terms, terms),
    preferred_node_selector=st.lists(
        st.fixed_dictionaries({"weight": st.integers(1, 5), "preference": terms}), max_size=2
    ).map(tuple),
    tolerations=st.lists(tolerations, max_size=2).map(tuple),
    patch=patches,
)


@settings(max_examples=400)
@given(pod=pods, subset=subsets)
def test_the_pod_and_patch_equal_injection_into_a_private_deep_copy(
    pod: JSON, subset: Subset
) -> None:
    before = copy.deepcopy(pod)
    try:
        expected = _reference(pod, subset, "ws")
    except InjectionError as exc:
        expected_error: str | None = str(exc)
    else:
        expected_error = None
    assert pod == before
    decision = _admitted(pod, subset)
    if expected_error is not None:
        assert not decision.allowed
        assert decision.message == expected_error
        assert pod == before
        return
    assert decision.allowed
    injected, ops = decision.pod, decision.patch
    assert (injected, ops) == expected
    assert pod == before, "the pod sent is unchanged"
    assert json_patch.apply(pod, ops) == injected
