"""The whole subset workload per kind, as Kruise's adapters render it (plus the #1230 fix)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.features.uniteddeployment.core.model import from_object
from spreadbus.features.uniteddeployment.core.rendering import (
    PatchError,
    render_workload,
    subset_prefix,
)
from tests.uniteddeployment.world import REVISION, SUBSET, united, zone

JSON = dict[str, Any]


def render(ud: JSON, subset: int = 0, *, existing: JSON | None = None, partition: int = 1) -> JSON:
    model = from_object(ud)
    return render_workload(
        model,
        model.subsets[subset],
        existing=existing,
        revision="sample-ud-rev",
        replicas=3,
        partition=partition,
    )


KINDS = [
    ("statefulSetTemplate", "apps/v1", "StatefulSet"),
    ("advancedStatefulSetTemplate", "apps.kruise.io/v1beta1", "StatefulSet"),
    ("cloneSetTemplate", "apps.kruise.io/v1alpha1", "CloneSet"),
    ("deploymentTemplate", "apps/v1", "Deployment"),
]


@pytest.mark.parametrize(("key", "api_version", "kind"), KINDS)
def test_a_create_has_the_kinds_identity_labels_owner_and_selector(
    key: str, api_version: str, kind: str
) -> None:
    found = render(united([zone("subset-a")], key=key))
    assert (found["apiVersion"], found["kind"]) == (api_version, kind)
    meta = found["metadata"]
    assert "name" not in meta
    assert meta["generateName"] == "sample-ud-subset-a-"
    assert meta["namespace"] == "default"
    assert meta["labels"] == {"app": "sample", REVISION: "sample-ud-rev", SUBSET: "subset-a"}
    assert meta["annotations"] == {"apps.kruise.io/subset-patch": ""}
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "UnitedDeployment",
            "name": "sample-ud",
            "uid": "sample-ud-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    spec = found["spec"]
    assert spec["selector"] == {"matchLabels": {"app": "sample", SUBSET: "subset-a"}}
    assert spec["replicas"] == 3
    assert spec["template"]["metadata"]["labels"] == {
        "app": "sample",
        SUBSET: "subset-a",
        REVISION: "sample-ud-rev",
    }


@pytest.mark.parametrize(
    ("key", "strategy", "expected"),
    [
        ("statefulSetTemplate", None, {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}),
        (
            "statefulSetTemplate",
            {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}},
            {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2, "partition": 1}},
        ),
        ("statefulSetTemplate", {"type": "OnDelete"}, {"type": "OnDelete"}),
        ("advancedStatefulSetTemplate", None, {"rollingUpdate": {"partition": 1}}),
        ("advancedStatefulSetTemplate", {"type": "OnDelete"}, {"type": "OnDelete"}),
        ("cloneSetTemplate", None, {"partition": 1}),
        ("cloneSetTemplate", {"partition": "50%"}, {"partition": 1}),
        ("deploymentTemplate", None, None),
    ],
)
def test_the_partition_goes_where_each_kind_keeps_it(
    key: str, strategy: JSON | None, expected: JSON | None
) -> None:
    ud = united([zone("a")], key=key)
    if strategy is not None:
        ud["spec"]["template"][key]["spec"]["updateStrategy"] = strategy
    assert render(ud)["spec"].get("updateStrategy") == expected


def test_the_prefix_falls_back_to_the_ud_name_when_not_a_valid_name() -> None:
    assert subset_prefix("ud", "zone-a") == "ud-zone-a-"
    assert subset_prefix("ud", "Zone_A") == "ud-"
    assert subset_prefix("ud", "x" * 260) == "ud-"


def affinity_terms(found: JSON) -> Any:
    pod_spec = found["spec"]["template"]["spec"]
    return pod_spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]


def test_match_expressions_and_match_fields_are_added_to_every_template_term() -> None:
    ud = united(
        [
            {
                "name": "a",
                "nodeSelectorTerm": {
                    "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}],
                    "matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": ["node-1"]}
                    ],
                },
            }
        ]
    )
    pod_spec = ud["spec"]["template"]["statefulSetTemplate"]["spec"]["template"]["spec"]
    pod_spec["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]},
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["x"]}]},
                ]
            }
        }
    }
    zone_expr = {"key": "zone", "operator": "In", "values": ["a"]}
    name_field = {"key": "metadata.name", "operator": "In", "values": ["node-1"]}
    assert affinity_terms(render(ud)) == [
        {
            "matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}, zone_expr],
            "matchFields": [name_field],
        },
        {
            "matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["x"]},
                name_field,
            ],
            "matchExpressions": [zone_expr],
        },
    ]


def test_match_fields_alone_make_a_required_term() -> None:
    field = {"key": "metadata.name", "operator": "In", "values": ["node-1"]}
    found = render(united([{"name": "a", "nodeSelectorTerm": {"matchFields": [field]}}]))
    assert affinity_terms(found) == [{"matchFields": [field]}]


def test_an_empty_term_leaves_the_affinity_alone() -> None:
    found = render(united([{"name": "a", "nodeSelectorTerm": {}}]))
    assert "affinity" not in found["spec"]["template"]["spec"]


def test_tolerations_follow_the_templates() -> None:
    own = {"key": "dedicated", "operator": "Exists"}
    mine = {"key": "zone", "operator": "Equal", "value": "a", "effect": "NoSchedule"}
    ud = united([zone("a", tolerations=[mine])])
    ud["spec"]["template"]["statefulSetTemplate"]["spec"]["template"]["spec"]["tolerations"] = [own]
    assert render(ud)["spec"]["template"]["spec"]["tolerations"] == [own, mine]


def test_the_patch_merges_containers_by_name_and_is_recorded_compactly() -> None:
    patch = {
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "resources": {"limits": {"memory": "800Mi", "cpu": "2"}},
                    "env": [{"name": "subset", "value": "a"}],
                }
            ]
        },
        "metadata": {"labels": {"tier": "gold"}},
    }
    found = render(united([zone("a", patch=patch)]))
    pod = found["spec"]["template"]
    assert pod["spec"]["containers"] == [
        {
            "name": "main",
            "image": "nginx:alpine",
            "resources": {"limits": {"memory": "800Mi", "cpu": "2"}},
            "env": [{"name": "subset", "value": "a"}],
        }
    ]
    assert pod["metadata"]["labels"]["tier"] == "gold"
    assert found["metadata"]["annotations"]["apps.kruise.io/subset-patch"] == (
        '{"metadata":{"labels":{"tier":"gold"}},"spec":{"containers":[{"env":[{"name":"subset",'
        '"value":"a"}],"name":"main","resources":{"limits":{"cpu":"2","memory":"800Mi"}}}]}}'
    )


def test_a_patch_that_cannot_apply_is_an_error() -> None:
    bad = {"spec": {"containers": [{"name": "main", "$patch": "bogus"}]}}
    with pytest.raises(PatchError):
        render(united([zone("a", patch=bad)]))


def test_an_update_keeps_the_observed_metadata_and_replaces_the_spec() -> None:
    ud = united([zone("a")])
    observed = render(ud)
    observed["metadata"].update(name="sample-ud-a-x1", uid="w-uid", resourceVersion="7")
    observed["metadata"]["labels"]["team"] = "blue"
    observed["metadata"]["annotations"]["note"] = "kept"
    observed["metadata"]["ownerReferences"].insert(0, {"kind": "Other", "uid": "o", "name": "o"})
    observed["spec"]["serviceName"] = "left-over"
    observed["status"] = {"replicas": 3}
    found = render(ud, existing=observed)
    meta = found["metadata"]
    assert (meta["name"], meta["uid"], meta["resourceVersion"]) == ("sample-ud-a-x1", "w-uid", "7")
    assert meta["labels"]["team"] == "blue"
    assert meta["annotations"]["note"] == "kept"
    assert [r["uid"] for r in meta["ownerReferences"]] == ["o", "sample-ud-uid"]
    assert "serviceName" not in found["spec"]
    assert "status" not in found


def test_rendering_does_not_change_its_inputs() -> None:
    ud = united([zone("a", tolerations=[{"key": "k", "operator": "Exists"}])])
    before = copy.deepcopy(ud)
    render(ud)
    assert ud == before


_names = st.from_regex(r"[a-z][a-zA-Z]{0,8}", fullmatch=True)
_leaf = st.one_of(st.integers(-5, 5), st.text(max_size=4), st.booleans())
_values = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(_names, inner, max_size=3)
    ),
    max_leaves=8,
)
_MANAGED_SPEC = {"selector", "replicas", "template", "updateStrategy"}
_MANAGED_POD_SPEC = {"affinity", "tolerations"}


@settings(max_examples=60, deadline=None)
@given(
    key=st.sampled_from([k for k, _, _ in KINDS]),
    spec_extra=st.dictionaries(
        _names.filter(lambda n: n not in _MANAGED_SPEC), _values, max_size=4
    ),
    pod_extra=st.dictionaries(
        _names.filter(lambda n: n not in _MANAGED_POD_SPEC | {"containers"}), _values, max_size=4
    ),
    annotations=st.dictionaries(_names, st.text(max_size=5), max_size=3),
)
def test_rendering_never_loses_a_template_field(
    key: str, spec_extra: JSON, pod_extra: JSON, annotations: dict[str, str]
) -> None:
    ud = united([zone("a")], key=key)
    workload_template = ud["spec"]["template"][key]
    workload_template["spec"].update(copy.deepcopy(spec_extra))
    workload_template["spec"]["template"]["spec"].update(copy.deepcopy(pod_extra))
    workload_template["metadata"]["annotations"] = dict(annotations)
    found = render(ud)
    for name, value in spec_extra.items():
        assert found["spec"][name] == value
    pod_spec = found["spec"]["template"]["spec"]
    for name, value in pod_extra.items():
        assert pod_spec[name] == value
    assert pod_spec["containers"] == [{"name": "main", "image": "nginx:alpine"}]
    for name, value in annotations.items():
        assert found["metadata"]["annotations"][name] == value
    json.dumps(found)
