"""Strategic merge patch against Kubernetes' own test tables, then against built-in kinds.

``data/strategic_merge_patch.yaml`` holds the application facts of upstream's strategic merge
patch tests (the two-way and three-way patches of its generated-patch tables and its hand-written
patches): an object, a patch, and what upstream's ``StrategicMergePatch`` makes of them, over the
test schema below (the field strategies of upstream's test type). The rest of the module checks
the merge metadata of built-in kinds and properties of the merge.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import assume, given
from hypothesis import strategies as st

from kubesemantics import strategic_merge as smp
from kubesemantics.strategic_merge import FieldMeta, PatchMeta

_ITEM_FIELDS: dict[str, FieldMeta] = {}
ITEM = PatchMeta(_ITEM_FIELDS)
"""The test type: lists merge on ``name`` or as sets of scalars, ``nonMerging*`` lists are
replaced, ``retainKeysMap``/``retainKeysMergingList`` honour ``$retainKeys``."""

RETAIN_KEYS_ITEM = PatchMeta(
    {
        "mergingIntList": FieldMeta(merge=True),
        "mergingList": FieldMeta(merge=True, merge_key="name", schema=ITEM),
        "nonMergingList": FieldMeta(schema=ITEM),
    }
)
_ITEM_FIELDS.update(
    {
        "mergingList": FieldMeta(merge=True, merge_key="name", schema=ITEM),
        "nonMergingList": FieldMeta(schema=ITEM),
        "mergingIntList": FieldMeta(merge=True),
        "mergeItemPtr": FieldMeta(merge=True, merge_key="name", schema=ITEM),
        "retainKeysMap": FieldMeta(retain_keys=True, schema=RETAIN_KEYS_ITEM),
        "retainKeysMergingList": FieldMeta(
            merge=True, merge_key="name", retain_keys=True, schema=ITEM
        ),
    }
)

_ROWS: list[dict[str, Any]] = yaml.safe_load(
    (Path(__file__).parent / "data" / "strategic_merge_patch.yaml").read_text()
)


def _sorted_lists(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted_lists(v) for k, v in value.items()}
    if isinstance(value, list):
        return sorted(
            (_sorted_lists(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True)
        )
    return value


@pytest.mark.parametrize("row", [pytest.param(r, id=r["id"]) for r in _ROWS if "error" not in r])
def test_a_patch_gives_the_object_upstream_gives(row: dict[str, Any]) -> None:
    assert smp.apply(row["original"], row["patch"], ITEM) == row["expected"]


@pytest.mark.parametrize("row", [pytest.param(r, id=r["id"]) for r in _ROWS if "error" in r])
def test_a_malformed_patch_is_refused_like_upstream(row: dict[str, Any]) -> None:
    with pytest.raises(smp.PatchError, match=row["error"]):
        smp.apply(row["original"], row["patch"], ITEM)


def test_the_upstream_tables_cover_every_directive() -> None:
    text = json.dumps([r["patch"] for r in _ROWS])
    for directive in (
        '"$patch": "delete"',
        '"$patch": "replace"',
        "$retainKeys",
        "$setElementOrder/",
        "$deleteFromPrimitiveList/",
        "null",
    ):
        assert directive in text


def test_applying_a_patch_leaves_its_inputs_unchanged() -> None:
    for row in _ROWS:
        original, patch = json.dumps(row["original"]), json.dumps(row["patch"])
        try:
            smp.apply(row["original"], row["patch"], ITEM)
        except smp.PatchError:
            pass
        assert (json.dumps(row["original"]), json.dumps(row["patch"])) == (original, patch)


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        pytest.param(
            {"mergingList": [{"name": 1, "$patch": "merge"}]},
            "merging lists cannot yet be specified in the patch",
            id="merge-directive-in-a-list",
        ),
        pytest.param(
            {"mergingList": [{"name": 1, "$patch": "explode"}]},
            "unknown patch type: explode",
            id="unknown-directive-in-a-list",
        ),
        pytest.param({"$patch": "explode"}, "unknown patch type: explode", id="unknown-directive"),
        pytest.param(
            {"mergingList": [{"$patch": "delete"}]},
            "does not contain declared merge key: name",
            id="delete-without-merge-key",
        ),
        pytest.param(
            {"retainKeysMap": {"$retainKeys": ["name"], "value": "x"}},
            "invalid patch format of retainKeys",
            id="field-outside-retain-keys",
        ),
        pytest.param(
            {"mergingList": [{"name": 1}, 2]},
            "list element types are not identical",
            id="mixed-list-items",
        ),
    ],
)
def test_a_patch_upstream_refuses_is_refused(patch: dict[str, Any], message: str) -> None:
    with pytest.raises(smp.PatchError, match=message):
        smp.apply({"mergingList": [{"name": 1}], "retainKeysMap": {"name": "a"}}, patch, ITEM)


# --- Built-in kinds ------------------------------------------------------------------------------


def _pod(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def test_containers_merge_by_name_and_new_ones_come_before_the_live_only_ones() -> None:
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
        {"name": "c", "image": "z"},
        {"name": "b", "image": "y"},
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


def test_delete_directive_in_a_map_empties_it_and_adds_nothing_where_it_is_absent() -> None:
    orig = _pod(affinity={"nodeAffinity": {}})
    out = smp.apply(orig, {"spec": {"affinity": {"$patch": "delete"}}}, smp.POD)
    assert out["spec"]["affinity"] == {}
    out = smp.apply(_pod(), {"spec": {"affinity": {"$patch": "delete"}}}, smp.POD)
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


def test_owner_references_merge_by_uid_and_a_new_one_goes_first() -> None:
    orig = {"metadata": {"name": "x", "ownerReferences": [{"uid": "1", "name": "a"}]}}
    out = smp.apply(orig, {"metadata": {"ownerReferences": [{"uid": "2", "name": "b"}]}}, smp.POD)
    assert [r["uid"] for r in out["metadata"]["ownerReferences"]] == ["2", "1"]
    order = {"$setElementOrder/ownerReferences": [{"uid": "1"}, {"uid": "2"}]}
    out = smp.apply(orig, {"metadata": {**order, "ownerReferences": [{"uid": "2"}]}}, smp.POD)
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


# --- Properties ---------------------------------------------------------------------------------

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
    st.fixed_dictionaries({"name": _names, "value": st.sampled_from(["1", "2"])}),
    max_size=3,
    unique_by=lambda e: e["name"],
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
