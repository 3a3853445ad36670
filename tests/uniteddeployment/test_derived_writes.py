"""What a UnitedDeployment's plans write follows from the UD, and forged writes do not.

Every create and update the reconcile decides, for every template kind, partitions, subset
patches, maxReplicas and template changes, passes the actuator's check against the UD it was
decided on; a privileged template, another namespace, a borrowed or second controller, another
kind or more replicas than the UD asks are each refused, naming the field.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesemantics import merge_patch
from spreadbus.features.uniteddeployment.core.derived_writes import (
    revision_follows,
    workload_follows,
)
from spreadbus.features.uniteddeployment.core.reservation import override_max_unavailable
from spreadbus.features.uniteddeployment.planning.rule import workload_patch
from tests.uniteddeployment.world import materialize, run, united, zone

JSON = dict[str, Any]

_KINDS = st.sampled_from(
    ["statefulSetTemplate", "advancedStatefulSetTemplate", "cloneSetTemplate", "deploymentTemplate"]
)
_PATCHES = st.none() | st.builds(
    lambda value: {"spec": {"containers": [{"name": "main", "env": [{"name": "Z",
                                                                       "value": value}]}]}},
    st.text("abc", max_size=3),
)
_MAX = st.none() | st.integers(0, 5) | st.sampled_from(["50%", "10%"])


def created(workload: JSON, name: str) -> JSON:
    """The object a create plan of the rendered ``workload`` sends (named by its target)."""
    body = copy.deepcopy(workload)
    metadata = {k: v for k, v in body["metadata"].items() if k != "generateName"}
    body["metadata"] = {**metadata, "name": name, "namespace": "default"}
    return body


def sample(**fields: Any) -> JSON:
    return united([zone("a"), zone("b"), zone("c")], **fields)


def first_create(ud: JSON) -> JSON:
    decision = run(ud).subsets["a"]
    assert decision.action == "create"
    return created(decision.workload, "sample-ud-a-x1")


@settings(max_examples=60, deadline=None)
@given(key=_KINDS, total=st.integers(0, 9), count=st.integers(1, 3),
       partitions=st.lists(st.integers(0, 4), min_size=3, max_size=3), patch=_PATCHES,
       maxima=st.lists(_MAX, min_size=3, max_size=3), image=st.sampled_from(["nginx:1",
                                                                              "nginx:2"]))
def test_every_create_and_update_the_reconcile_decides_follows_from_its_ud(
    key: str, total: int, count: int, partitions: list[int], patch: JSON | None,
    maxima: list[int | str | None], image: str,
) -> None:
    subsets = []
    for i in range(count):
        extra: JSON = {} if patch is None else {"patch": patch}
        if maxima[i] is not None:
            extra["maxReplicas"] = maxima[i]
        subsets.append(zone(f"s{i}", **extra))
    ud = united(subsets, replicas=total, key=key,
                partitions={f"s{i}": partitions[i] for i in range(count)})
    first = run(ud)
    for name, decision in first.subsets.items():
        if decision.action == "create":
            written = created(decision.workload, f"sample-ud-{name}-x1")
            assert workload_follows(ud, written, None) == "", name
    for revision in first.revision_creates:
        assert revision_follows(ud, revision, None) == ""
    observed = [materialize(d.workload, suffix=n) for n, d in first.subsets.items()]
    ud["status"] = first.status
    changed = copy.deepcopy(ud)
    changed["metadata"]["generation"] += 1
    changed["spec"]["replicas"] = total + 2
    changed["spec"]["template"][key]["spec"]["template"]["spec"]["containers"][0]["image"] = image
    second = run(changed, observed, [], list(first.revision_creates))
    by_name = {w["metadata"]["labels"]["apps.kruise.io/subset-name"]: w for w in observed}
    for name, decision in second.subsets.items():
        if decision.action != "update":
            continue
        before = by_name[name]
        after = merge_patch.apply(before, workload_patch(before, decision.workload))
        assert workload_follows(changed, after, before) == "", name
    for revision in second.revision_creates:
        assert revision_follows(changed, revision, None) == ""


def test_the_reservation_override_of_max_unavailable_follows_too() -> None:
    ud = sample()
    written = first_create(ud)
    overridden = override_max_unavailable(written, current_replicas=2, ready_replicas=1,
                                          update_timeout_pods=0)
    assert overridden != written
    assert workload_follows(ud, overridden, None) == ""


def test_a_privileged_host_network_template_is_refused() -> None:
    ud = sample()
    written = first_create(ud)
    pod_spec = written["spec"]["template"]["spec"]
    pod_spec["hostNetwork"] = True
    pod_spec["containers"][0]["securityContext"] = {"privileged": True}
    why = workload_follows(ud, written, None)
    assert why.startswith("spec.template is not what the UnitedDeployment's template makes")


def test_a_workload_in_another_namespace_is_refused() -> None:
    ud = sample()
    written = first_create(ud)
    written["metadata"]["namespace"] = "kube-system"
    assert workload_follows(ud, written, None) == (
        "metadata.namespace: 'kube-system', the UnitedDeployment is in 'default'")


def test_the_controller_must_be_the_ud_alone() -> None:
    ud = sample()
    borrowed = first_create(ud)
    borrowed["metadata"]["ownerReferences"][0]["uid"] = "someone-else"
    second = first_create(ud)
    second["metadata"]["ownerReferences"].append(
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x", "uid": "u",
         "controller": True})
    none = first_create(ud)
    none["metadata"]["ownerReferences"] = []
    for written in (borrowed, second, none):
        assert workload_follows(ud, written, None).startswith("metadata.ownerReferences:")


def test_another_kind_or_an_unknown_subset_is_refused() -> None:
    ud = sample()
    deployment = first_create(ud)
    deployment["kind"] = "Deployment"
    assert workload_follows(ud, deployment, None).startswith("kind: a Deployment of apps")
    stranger = first_create(ud)
    stranger["metadata"]["labels"]["apps.kruise.io/subset-name"] = "z"
    assert "'z' is no subset" in workload_follows(ud, stranger, None)


@given(replicas=st.integers(7, 2**31 - 1))
def test_replicas_beyond_the_ud_are_refused(replicas: int) -> None:
    ud = sample()
    written = first_create(ud)
    written["spec"]["replicas"] = replicas
    assert workload_follows(ud, written, None).startswith(f"spec.replicas: {replicas} is more")


def test_a_subset_is_held_to_its_max_replicas_and_a_patch_may_keep_what_it_has() -> None:
    ud = united([zone("a", maxReplicas=2), zone("b")], replicas=6)
    written = first_create(ud)
    written["spec"]["replicas"] = 3
    assert "(2)" in workload_follows(ud, written, None)
    before = copy.deepcopy(written)
    before["spec"]["replicas"] = 4
    assert workload_follows(ud, written, before) == "", "a scale-down from 4 to 3"
    written["spec"]["replicas"] = 5
    assert "(4)" in workload_follows(ud, written, before)


@given(bad=st.sampled_from([None, -1, "3", 2.5, True]))
def test_replicas_that_are_no_count_are_refused(bad: Any) -> None:
    ud = sample()
    written = first_create(ud)
    written["spec"]["replicas"] = bad
    assert workload_follows(ud, written, None).startswith("spec.replicas:")


def test_a_revision_must_record_the_uds_template() -> None:
    ud = sample()
    [revision] = run(ud).revision_creates
    assert revision_follows(ud, revision, None) == ""
    forged = copy.deepcopy(revision)
    forged["data"]["spec"]["template"]["statefulSetTemplate"]["spec"]["template"]["spec"][
        "containers"][0]["image"] = "evil:1"
    assert revision_follows(ud, forged, None) == "data: not the UnitedDeployment's template"
    elsewhere = copy.deepcopy(revision)
    elsewhere["metadata"]["namespace"] = "kube-system"
    assert revision_follows(ud, elsewhere, None).startswith("metadata.namespace:")
