"""UnitedDeployment UPDATE rules: what a subset and a stateful template may not change."""

from __future__ import annotations

import copy

from tests.uniteddeployment.test_validation_rules import JSON, SUBSETS, base, stateful, triples


def updated(old: JSON) -> JSON:
    return copy.deepcopy(old)


def test_an_unchanged_update_is_allowed() -> None:
    old = base()
    assert triples(updated(old), old) == []


def test_changing_a_subsets_node_selector_term_is_forbidden() -> None:
    old = base()
    new = updated(old)
    new["spec"]["topology"]["subsets"][0]["nodeSelectorTerm"]["matchExpressions"][0][
        "values"] = ["zone-z"]
    assert triples(new, old) == [
        (f"{SUBSETS}[0].nodeSelectorTerm", "Forbidden", "may not be changed in an update")]


def test_changing_tolerations_is_forbidden_and_reported_twice() -> None:
    old = base()
    new = updated(old)
    new["spec"]["topology"]["subsets"][1]["tolerations"] = [
        {"key": "k", "operator": "Exists", "effect": "NoSchedule"}]
    error = (f"{SUBSETS}[1].tolerations", "Forbidden", "may not be changed in an update")
    assert triples(new, old) == [error, error]


def test_a_subset_is_matched_by_name_not_position_and_new_subsets_are_free() -> None:
    old = base()
    new = updated(old)
    subsets = new["spec"]["topology"]["subsets"]
    subsets.insert(0, {"name": "subset-new", "tolerations": [{"operator": "Exists"}]})
    subsets[1]["nodeSelectorTerm"] = {}
    assert triples(new, old) == [
        (f"{SUBSETS}[1].nodeSelectorTerm", "Forbidden", "may not be changed in an update")]


def test_replicas_min_max_and_patch_may_change_and_subsets_may_go() -> None:
    old = base()
    new = updated(old)
    subsets = new["spec"]["topology"]["subsets"]
    subsets[0]["replicas"] = 3
    subsets[1]["patch"] = {"metadata": {"labels": {"x": "y"}}}
    del subsets[2]
    new["spec"]["updateStrategy"]["manualUpdate"]["partitions"] = {}
    assert triples(new, old) == []


def test_null_and_empty_tolerations_are_the_same() -> None:
    old = base()
    old["spec"]["topology"]["subsets"][1]["tolerations"] = None
    new = updated(old)
    new["spec"]["topology"]["subsets"][1]["tolerations"] = []
    assert triples(new, old) == []


def test_a_statefulset_template_may_change_only_its_allowed_fields() -> None:
    old = stateful(base())
    new = updated(old)
    spec = new["spec"]["template"]["statefulSetTemplate"]["spec"]
    spec["template"]["spec"]["containers"][0]["image"] = "nginx:2"
    spec["updateStrategy"] = {"type": "OnDelete"}
    spec["minReadySeconds"] = 5
    spec["persistentVolumeClaimRetentionPolicy"] = {"whenDeleted": "Delete"}
    spec["ordinals"] = {"start": 2}
    assert triples(new, old) == []
    spec["serviceName"] = "headless"
    assert triples(new, old) == [(
        "spec.template.statefulSetTemplate.spec", "Forbidden",
        "updates to statefulsetTemplate spec for fields other than 'template', 'updateStrategy', "
        "'persistentVolumeClaimRetentionPolicy', 'minReadySeconds' and 'ordinals' are "
        "forbidden")]


def test_an_advanced_statefulset_template_may_change_template_and_strategy_only() -> None:
    old = base()
    template = old["spec"]["template"].pop("deploymentTemplate")
    old["spec"]["template"]["advancedStatefulSetTemplate"] = template
    new = updated(old)
    spec = new["spec"]["template"]["advancedStatefulSetTemplate"]["spec"]
    spec["updateStrategy"] = {"type": "OnDelete"}
    assert triples(new, old) == []
    spec["minReadySeconds"] = 5
    assert triples(new, old) == [(
        "spec.template.advancedStatefulSetTemplate.spec", "Forbidden",
        "updates to advancedStatefulsetTemplate spec for fields other than 'template', and "
        "'updateStrategy' are forbidden")]


def test_a_deployment_template_may_change_anything() -> None:
    old = base()
    new = updated(old)
    new["spec"]["template"]["deploymentTemplate"]["spec"]["minReadySeconds"] = 9
    new["spec"]["template"]["deploymentTemplate"]["spec"]["strategy"] = {"type": "Recreate"}
    assert triples(new, old) == []


def test_name_and_namespace_are_immutable_and_negative_replicas_reported_again() -> None:
    old = base()
    new = updated(old)
    new["metadata"]["namespace"] = "other"
    new["spec"]["replicas"] = -3
    new["spec"]["topology"]["subsets"] = new["spec"]["topology"]["subsets"][:1]
    del new["spec"]["topology"]["subsets"][0]["replicas"]
    new["spec"]["updateStrategy"] = {}
    fields = [f for f, _, _ in triples(new, old)]
    assert fields == ["spec.replicas", SUBSETS, "metadata.namespace", "spec.replicas"]
