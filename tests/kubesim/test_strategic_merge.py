"""Strategic merge patch semantics, checked against upstream's documented behaviour."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from kubesemantics import strategic_merge as smp


def _pod(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def test_containers_merge_by_name_and_keep_unmentioned_fields() -> None:
    orig = _pod(
        containers=[
            {"name": "a", "image": "x:1", "ports": [{"containerPort": 80}]},
            {"name": "b", "image": "y"},
        ]
    )
    out = smp.apply(
        orig,
        {"spec": {"containers": [{"name": "a", "image": "x:2"}, {"name": "c", "image": "z"}]}},
        smp.POD,
    )
    assert out["spec"]["containers"] == [
        {"name": "a", "image": "x:2", "ports": [{"containerPort": 80}]},
        {"name": "b", "image": "y"},
        {"name": "c", "image": "z"},
    ]
    assert orig["spec"]["containers"][0]["image"] == "x:1"


def test_env_merges_by_name_inside_a_container() -> None:
    orig = _pod(
        containers=[
            {"name": "a", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}
        ]
    )
    out = smp.apply(
        orig,
        {"spec": {"containers": [{"name": "a", "env": [{"name": "B", "value": "3"}]}]}},
        smp.POD,
    )
    assert out["spec"]["containers"][0]["env"] == [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "3"},
    ]


def test_delete_directive_removes_a_list_item_by_merge_key() -> None:
    orig = _pod(volumes=[{"name": "v1", "emptyDir": {}}, {"name": "v2", "emptyDir": {}}])
    out = smp.apply(orig, {"spec": {"volumes": [{"name": "v1", "$patch": "delete"}]}}, smp.POD)
    assert out["spec"]["volumes"] == [{"name": "v2", "emptyDir": {}}]


def test_replace_directive_in_a_list_replaces_the_whole_list() -> None:
    orig = _pod(containers=[{"name": "a"}, {"name": "b"}])
    out = smp.apply(orig, {"spec": {"containers": [{"name": "c"}, {"$patch": "replace"}]}}, smp.POD)
    assert out["spec"]["containers"] == [{"name": "c"}]


def test_replace_directive_in_a_map_replaces_the_map() -> None:
    orig = _pod(nodeSelector={"a": "1", "b": "2"})
    out = smp.apply(orig, {"spec": {"nodeSelector": {"c": "3", "$patch": "replace"}}}, smp.POD)
    assert out["spec"]["nodeSelector"] == {"c": "3"}


def test_delete_directive_in_a_map_removes_it() -> None:
    orig = _pod(affinity={"nodeAffinity": {}})
    out = smp.apply(orig, {"spec": {"affinity": {"$patch": "delete"}}}, smp.POD)
    assert "affinity" not in out["spec"]


def test_tolerations_are_replaced_because_upstream_declares_no_merge_key() -> None:
    orig = _pod(tolerations=[{"key": "a", "operator": "Exists"}])
    out = smp.apply(orig, {"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}}, smp.POD)
    assert out["spec"]["tolerations"] == [{"key": "b", "operator": "Exists"}]


def test_finalizers_merge_as_a_set_and_delete_from_primitive_list_removes() -> None:
    orig = {"metadata": {"name": "x", "finalizers": ["a", "b"]}}
    out = smp.apply(orig, {"metadata": {"finalizers": ["b", "c"]}}, smp.POD)
    assert out["metadata"]["finalizers"] == ["a", "b", "c"]
    out = smp.apply(out, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}, smp.POD)
    assert out["metadata"]["finalizers"] == ["b", "c"]


def test_owner_references_merge_by_uid() -> None:
    orig = {"metadata": {"name": "x", "ownerReferences": [{"uid": "1", "name": "a"}]}}
    out = smp.apply(orig, {"metadata": {"ownerReferences": [{"uid": "2", "name": "b"}]}}, smp.POD)
    assert [r["uid"] for r in out["metadata"]["ownerReferences"]] == ["1", "2"]


def test_conditions_merge_by_type() -> None:
    orig = {
        "status": {
            "conditions": [
                {"type": "Ready", "status": "False"},
                {"type": "PodScheduled", "status": "True"},
            ]
        }
    }
    out = smp.apply(
        orig, {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}, smp.POD
    )
    assert out["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "PodScheduled", "status": "True"},
    ]


def test_ports_merge_on_container_port() -> None:
    orig = _pod(containers=[{"name": "a", "ports": [{"containerPort": 80, "name": "http"}]}])
    out = smp.apply(
        orig,
        {
            "spec": {
                "containers": [
                    {
                        "name": "a",
                        "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443}],
                    }
                ]
            }
        },
        smp.POD,
    )
    assert out["spec"]["containers"][0]["ports"] == [
        {"containerPort": 80, "name": "http", "protocol": "TCP"},
        {"containerPort": 443},
    ]


def test_null_deletes_a_field_and_retain_keys_drops_the_rest() -> None:
    orig = {
        "spec": {
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
            "paused": True,
        }
    }
    out = smp.apply(
        orig,
        {"spec": {"paused": None, "strategy": {"$retainKeys": ["type"], "type": "Recreate"}}},
        smp.DEPLOYMENT,
    )
    assert out["spec"] == {"strategy": {"type": "Recreate"}}


def test_set_element_order_orders_the_merged_list() -> None:
    orig = _pod(containers=[{"name": "a"}, {"name": "b"}])
    out = smp.apply(
        orig,
        {
            "spec": {
                "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
                "containers": [{"name": "a", "image": "i"}],
            }
        },
        smp.POD,
    )
    assert [c["name"] for c in out["spec"]["containers"]] == ["b", "a"]


def test_pod_template_inside_a_deployment_uses_pod_merge_keys() -> None:
    orig = {
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "2"}]}
            }
        }
    }
    out = smp.apply(
        orig,
        {"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "3"}]}}}},
        smp.DEPLOYMENT,
    )
    assert [c["image"] for c in out["spec"]["template"]["spec"]["containers"]] == ["1", "3"]


def test_a_list_item_without_its_merge_key_is_an_error() -> None:
    with pytest.raises(smp.PatchError, match="does not contain declared merge key: name"):
        smp.apply(_pod(containers=[]), {"spec": {"containers": [{"image": "x"}]}}, smp.POD)


def test_unknown_patch_directive_is_an_error() -> None:
    with pytest.raises(smp.PatchError):
        smp.apply(_pod(), {"spec": {"$patch": "explode"}}, smp.POD)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from("abcd"), children, max_size=3)
    ),
    max_leaves=10,
)
_obj = st.dictionaries(st.sampled_from("abcd"), _json, max_size=4)


def _null_in_list(value: Any, in_list: bool = False) -> bool:
    if value is None:
        return in_list
    if isinstance(value, dict):
        return any(_null_in_list(v, in_list) for v in value.values())
    if isinstance(value, list):
        return any(_null_in_list(v, True) for v in value)
    return False


@given(_obj, _obj)
def test_without_merge_keys_a_strategic_patch_is_a_json_merge_patch(
    orig: dict[str, Any], patch: dict[str, Any]
) -> None:
    # Upstream drops nulls inside added list items (IgnoreUnmatchedNulls); RFC 7386 keeps them.
    assume(not _null_in_list(patch))
    assert smp.apply(orig, patch, smp.EMPTY) == smp.merge_patch(orig, patch)


def test_nulls_inside_replaced_list_items_are_discarded_like_upstream() -> None:
    assert smp.apply({}, {"a": [{"b": None, "c": 1}]}, smp.EMPTY) == {"a": [{"c": 1}]}


@given(_obj, _obj)
def test_applying_a_merge_patch_twice_changes_nothing_more(
    orig: dict[str, Any], patch: dict[str, Any]
) -> None:
    once = smp.merge_patch(orig, patch)
    assert smp.merge_patch(once, patch) == once


_names = st.sampled_from(["a", "b", "c"])
_env = st.lists(
    st.fixed_dictionaries({"name": _names, "value": st.sampled_from(["1", "2"])}), max_size=3
)
_container = st.fixed_dictionaries(
    {"name": _names}, optional={"image": st.sampled_from(["x:1", "x:2"]), "env": _env}
)
_patch_container = _container | st.fixed_dictionaries({"name": _names, "$patch": st.just("delete")})
_pod_spec = st.fixed_dictionaries(
    {},
    optional={
        "containers": st.lists(_container, max_size=3, unique_by=lambda c: c["name"]),
        "tolerations": st.lists(st.fixed_dictionaries({"key": _names}), max_size=2),
    },
)
_pod_patch = st.fixed_dictionaries(
    {},
    optional={
        "containers": st.lists(_patch_container, max_size=3, unique_by=lambda c: c["name"]),
        "tolerations": st.lists(st.fixed_dictionaries({"key": _names}), max_size=2),
        "nodeName": st.none() | _names,
    },
)


@given(_pod_spec, _pod_patch)
def test_strategic_patches_of_pods_are_idempotent(
    spec: dict[str, Any], patch: dict[str, Any]
) -> None:
    once = smp.apply({"spec": spec}, {"spec": patch}, smp.POD)
    assert smp.apply(once, {"spec": patch}, smp.POD) == once


@given(_pod_spec, _pod_patch)
def test_containers_not_named_by_a_patch_are_untouched(
    spec: dict[str, Any], patch: dict[str, Any]
) -> None:
    out = smp.apply({"spec": spec}, {"spec": patch}, smp.POD)
    named = {c["name"] for c in patch.get("containers", [])}
    before = {c["name"]: c for c in spec.get("containers", []) if c["name"] not in named}
    after = {c["name"]: c for c in out["spec"].get("containers", []) if c["name"] not in named}
    assert after == before
