"""UnitedDeployment validation, rule by rule: the field, the reason and Kruise's message."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from spreadbus.features.uniteddeployment.core.validation import validate_uniteddeployment

JSON = dict[str, Any]
SUBSETS = "spec.topology.subsets"


def base() -> JSON:
    """A valid UnitedDeployment: a Deployment template, 6 replicas over 1 / 50% / the rest."""
    return {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "UnitedDeployment",
        "metadata": {"name": "sample-ud", "namespace": "default"},
        "spec": {
            "replicas": 6,
            "selector": {"matchLabels": {"app": "sample"}},
            "template": {
                "deploymentTemplate": {
                    "metadata": {"labels": {"app": "sample"}},
                    "spec": {
                        "selector": {"matchLabels": {"app": "sample"}},
                        "template": {
                            "metadata": {"labels": {"app": "sample"}},
                            "spec": {"containers": [{"name": "main", "image": "nginx:alpine"}]},
                        },
                    },
                }
            },
            "topology": {
                "subsets": [
                    {"name": "subset-a", "replicas": 1,
                     "nodeSelectorTerm": {"matchExpressions": [
                         {"key": "node", "operator": "In", "values": ["zone-a"]}]}},
                    {"name": "subset-b", "replicas": "50%"},
                    {"name": "subset-c"},
                ]
            },
            "updateStrategy": {"type": "Manual", "manualUpdate": {"partitions": {"subset-a": 0}}},
        },
    }


def stateful(obj: JSON) -> JSON:
    """The same UnitedDeployment with a StatefulSet template."""
    template = obj["spec"]["template"].pop("deploymentTemplate")
    obj["spec"]["template"]["statefulSetTemplate"] = template
    return obj


def elastic(obj: JSON, bounds: list[tuple[object, object]]) -> JSON:
    subsets = []
    for i, (low, high) in enumerate(bounds):
        subset: JSON = {"name": f"s{i}"}
        if low is not None:
            subset["minReplicas"] = low
        if high is not None:
            subset["maxReplicas"] = high
        subsets.append(subset)
    obj["spec"]["topology"]["subsets"] = subsets
    obj["spec"]["updateStrategy"] = {"type": "Manual"}
    return obj


def spec(obj: JSON) -> JSON:
    result: JSON = obj["spec"]
    return result


def triples(obj: object, old: object | None = None) -> list[tuple[str, str, str]]:
    return [(e.field, e.type, e.message) for e in validate_uniteddeployment(obj, old=old)]


def test_the_base_object_is_valid() -> None:
    assert triples(base()) == []


Mutation = Callable[[JSON], object]

CASES: list[tuple[str, Mutation, list[tuple[str, str, str]]]] = [
    ("negative replicas", lambda o: spec(o).update(replicas=-3, updateStrategy={},
                                                   topology={"subsets": [{"name": "a"}]}),
     [("spec.replicas", "Invalid", "must be greater than or equal to 0"),
      (SUBSETS, "Invalid", "sum of indicated subset replicas 0 should not be greater than "
       "UnitedDeployment replicas -3")]),
    ("no selector", lambda o: spec(o).pop("selector"),
     [("spec.selector", "Required", ""),
      ("spec.template.deploymentTemplate.metadata.labels", "Invalid",
       "`selector` does not match template `labels`"),
      ("spec.template.deploymentTemplate.spec.template.metadata.labels", "Invalid",
       "`selector` does not match template `labels`")]),
    ("selector requirement without values", lambda o: spec(o).update(selector={
        "matchLabels": {"app": "sample"},
        "matchExpressions": [{"key": "tier", "operator": "In"}]}),
     [("spec.selector.matchExpressions[0].values", "Required",
       "must be specified when `operator` is 'In' or 'NotIn'"),
      ("spec.selector", "Invalid", "")]),
    ("empty selector", lambda o: spec(o).update(selector={}),
     [("spec.selector", "Invalid", "empty selector is invalid for statefulset")]),
    ("reservation with a StatefulSet template", lambda o: stateful(o) and spec(o).update(
        topology={"subsets": [{"name": "a", "maxReplicas": 2}, {"name": "b"}],
                  "scheduleStrategy": {"type": "Adaptive",
                                       "adaptive": {"reserveUnschedulablePods": True}}}),
     [("spec.topology.scheduleStrategy", "Invalid",
       "only stateless workloads (Deployment and CloneSet) are supported by reserved "
       "rescheduling"),
      ("spec.updateStrategy.manualUpdate.partitions", "Invalid",
       "subset subset-a does not exist")]),
    ("no template", lambda o: spec(o).update(template={}),
     [("spec.template", "Required", "should provide one of statefulSetTemplate, "
       "advancedStatefulSetTemplate, cloneSetTemplate, or deploymentTemplate")]),
    ("two templates", lambda o: spec(o)["template"].update(
        cloneSetTemplate=copy.deepcopy(spec(o)["template"]["deploymentTemplate"])),
     [("spec.template", "Invalid", "should provide only one of statefulSetTemplate, "
       "advancedStatefulSetTemplate, cloneSetTemplate, or deploymentTemplate")]),
    ("template labels", lambda o: spec(o)["template"]["deploymentTemplate"].update(
        metadata={"labels": {"app": "other"}}),
     [("spec.template.deploymentTemplate.metadata.labels", "Invalid",
       "`selector` does not match template `labels`")]),
    ("advanced statefulset labels are reported under statefulSetTemplate", lambda o: spec(o).update(
        template={"advancedStatefulSetTemplate": {
            "metadata": {"labels": {"app": "other"}},
            "spec": {"template": {"metadata": {"labels": {"app": "sample"}}, "spec": {
                "containers": [{"name": "main", "image": "nginx"}]}}}}}),
     [("spec.template.statefulSetTemplate.metadata.labels", "Invalid",
       "`selector` does not match template `labels`")]),
    ("deployment template replicas", lambda o: spec(o)["template"]["deploymentTemplate"][
        "spec"].update(replicas=3),
     [("spec.template.deploymentTemplate.spec.replicas", "Invalid",
       "replicas in deploymentTemplate will not be used")]),
    ("statefulset template replicas and partition", lambda o: stateful(o) and spec(o)[
        "template"]["statefulSetTemplate"]["spec"].update(
            replicas=3, updateStrategy={"type": "RollingUpdate",
                                        "rollingUpdate": {"partition": 1}}),
     [("spec.template.statefulSetTemplate.spec.replicas", "Invalid",
       "replicas in statefulSetTemplate will not be used"),
      ("spec.template.statefulSetTemplate.spec.updateStrategy.rollingUpdate.partition",
       "Invalid", "partition in statefulSetTemplate will not be used")]),
    ("statefulset spec enums", lambda o: stateful(o) and spec(o)["template"][
        "statefulSetTemplate"]["spec"].update(podManagementPolicy="Sometimes"),
     [("spec.template.statefulSetTemplate.spec.podManagementPolicy", "Invalid",
       "must be 'OrderedReady' or 'Parallel'")]),
    ("statefulset pod template labels against the UD selector", lambda o: stateful(o) and spec(
        o)["template"]["statefulSetTemplate"]["spec"]["template"].update(
            metadata={"labels": {"app": "x"}}),
     [("spec.template.statefulSetTemplate.spec.template.metadata.labels", "Invalid",
       "`selector` does not match template `labels`")]),
    ("no containers", lambda o: spec(o)["template"]["deploymentTemplate"]["spec"][
        "template"]["spec"].update(containers=[]),
     [("spec.template.deploymentTemplate.spec.template.spec.containers", "Required", "")]),
    ("container without image and a duplicate name", lambda o: spec(o)["template"][
        "deploymentTemplate"]["spec"]["template"]["spec"].update(
            containers=[{"name": "main", "image": "nginx"}, {"name": "main"}]),
     [("spec.template.deploymentTemplate.spec.template.spec.containers[1].name", "Duplicate", ""),
      ("spec.template.deploymentTemplate.spec.template.spec.containers[1].image", "Required",
       "")]),
    ("a deployment's pods must restart always", lambda o: spec(o)["template"][
        "deploymentTemplate"]["spec"]["template"]["spec"].update(restartPolicy="Never"),
     [("spec.template.deploymentTemplate.spec.template.spec.restartPolicy", "NotSupported",
       'supported values: "Always"')]),
    ("subset replicas not parsable", lambda o: spec(o)["topology"]["subsets"][1].update(
        replicas="50"),
     [(f"{SUBSETS}[1].replicas", "Invalid", "subset replicas (50) only support integer value "
       "or percentage value with a suffix '%'")]),
    ("percentage without spec.replicas", lambda o: spec(o).pop("replicas") and spec(o)[
        "topology"]["subsets"][2].update(replicas=1),
     [(f"{SUBSETS}[1].replicas", "Invalid", "subsetReplicas (50%) should not be string when "
       "unitedDeployment replicas is empty")]),
    ("min above max", lambda o: elastic(o, [(3, 2), (None, None)]),
     [(f"{SUBSETS}[0].minReplicas", "Invalid",
       "subset[0].minReplicas must be less than or equal to maxReplicas")]),
    ("bad minReplicas on its field", lambda o: elastic(o, [("x%", None), (None, None)]),
     [(f"{SUBSETS}[0].minReplicas", "Invalid", "subset replicas (x%) should be correct "
       'percentage integer: strconv.ParseInt: parsing "x": invalid syntax')]),
    ("bad maxReplicas on its own field", lambda o: elastic(o, [(None, -1), (None, None)]),
     [(f"{SUBSETS}[0].maxReplicas", "Invalid", "subset replicas (-1) should not be less than 0")]),
    ("replicas and min/max together", lambda o: spec(o)["topology"]["subsets"][2].update(
        maxReplicas=3),
     [(SUBSETS, "Invalid", "subset.Replicas and subset.MinReplicas/subset.MaxReplicas are "
       "mutually exclusive in a UnitedDeployment")]),
    ("min/max without spec.replicas", lambda o: elastic(o, [(1, 2), (None, None)]) and spec(
        o).pop("replicas"),
     [(SUBSETS, "Invalid", "spec.replicas must be not empty if you set "
       "subset.minReplicas/maxReplicas")]),
    ("every subset has a max", lambda o: elastic(o, [(None, 2), (None, 3)]),
     [(SUBSETS, "Invalid", "at least one subset.maxReplicas must be empty")]),
    # Only reachable with a subset whose minimum is above its own maximum (an unset maximum
    # counts as 1,000,000).
    ("sum of minima above sum of maxima", lambda o: elastic(o, [(None, 2), (3, 3), (
        3_000_000, None)]),
     [(f"{SUBSETS}[2].minReplicas", "Invalid",
       "subset[2].minReplicas must be less than or equal to maxReplicas"),
      (SUBSETS, "Invalid", "sum of indicated subset.minReplicas should not be greater than sum "
       "of indicated subset.maxReplicas")]),
    ("sum above spec.replicas prints the number", lambda o: spec(o).update(replicas=1),
     [(SUBSETS, "Invalid", "sum of indicated subset replicas 2 should not be greater than "
       "UnitedDeployment replicas 1")]),
    ("all fixed but the sum differs", lambda o: spec(o)["topology"]["subsets"][2].update(
        replicas=1),
     [(SUBSETS, "Invalid", "if replicas of all subsets are provided, the sum of indicated "
       "subset replicas 5 should equal UnitedDeployment replicas 6")]),
    ("no spec.replicas and some subset unspecified", lambda o: spec(o).update(
        replicas=None, topology={"subsets": [{"name": "a", "replicas": 1}, {"name": "b"}]},
        updateStrategy={}),
     [(SUBSETS, "Invalid", "if UnitedDeployment replicas is not provided, replicas of all "
       "subsets should be provided")]),
    ("subset name required", lambda o: spec(o)["topology"]["subsets"][2].update(name=""),
     [(f"{SUBSETS}[2].name", "Required", ""),
      (f"{SUBSETS}[2].name", "Invalid", "invalid subset name a lowercase RFC 1123 label must "
       "consist of lower case alphanumeric characters or '-', and must start and end with an "
       "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
       "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")]),
    ("duplicated subset name", lambda o: spec(o)["topology"]["subsets"][2].update(
        name="subset-b"),
     [(f"{SUBSETS}[2].name", "Invalid", "duplicated subset name subset-b")]),
    ("node selector term", lambda o: spec(o)["topology"]["subsets"][0].update(
        nodeSelectorTerm={"matchExpressions": [{"key": "node", "operator": "In"}]}),
     [(f"{SUBSETS}[0].nodeSelectorTerm.matchExpressions[0].values", "Required",
       "must be specified when `operator` is 'In' or 'NotIn'")]),
    ("node selector term match fields", lambda o: spec(o)["topology"]["subsets"][0].update(
        nodeSelectorTerm={"matchFields": [{"key": "metadata.uid", "operator": "In",
                                           "values": ["x"]}]}),
     [(f"{SUBSETS}[0].nodeSelectorTerm.matchFields[0].key", "Invalid",
       "not a valid field selector key")]),
    ("tolerations", lambda o: spec(o)["topology"]["subsets"][0].update(
        tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]),
     [(f"{SUBSETS}[0].tolerations[0].operator", "Invalid",
       "value must be empty when `operator` is 'Exists'")]),
    ("replicas with Adaptive", lambda o: spec(o)["topology"].update(
        scheduleStrategy={"type": "Adaptive"}),
     [(f"{SUBSETS}[0].replicas", "Forbidden",
       "specify replicas use minReplicas/maxReplicas to enable adaptive strategy"),
      (f"{SUBSETS}[1].replicas", "Forbidden",
       "specify replicas use minReplicas/maxReplicas to enable adaptive strategy")]),
    ("schedule strategy fields the schema refuses", lambda o: spec(o)["topology"].update(
        scheduleStrategy={"type": "Sometimes", "adaptive": {"rescheduleCriticalSeconds": "30"}}),
     [("spec.topology.scheduleStrategy.type", "NotSupported",
       'supported values: "Adaptive", "Fixed", ""'),
      ("spec.topology.scheduleStrategy.adaptive.rescheduleCriticalSeconds", "Invalid",
       "expected integer, got string")]),
    ("unknown update strategy type", lambda o: spec(o)["updateStrategy"].update(
        type="RollingUpdate"),
     [("spec.updateStrategy.type", "NotSupported", 'supported values: "Manual", ""')]),
    ("unknown partition key", lambda o: spec(o)["updateStrategy"]["manualUpdate"][
        "partitions"].update(ghost=1),
     [("spec.updateStrategy.manualUpdate.partitions", "Invalid", "subset ghost does not exist")]),
    ("metadata name", lambda o: o["metadata"].update(name="Bad_Name"),
     [("metadata.name", "Invalid", "a lowercase RFC 1123 subdomain must consist of lower case "
       "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
       "character (e.g. 'example.com', regex used for validation is "
       "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")]),
]


@pytest.mark.parametrize(("mutate", "expected"), [(m, e) for _, m, e in CASES],
                         ids=[name for name, _, _ in CASES])
def test_rule(mutate: Mutation, expected: list[tuple[str, str, str]]) -> None:
    obj = base()
    mutate(obj)
    assert triples(obj) == expected


def test_errors_come_in_kruises_order() -> None:
    obj = base()
    obj["spec"]["replicas"] = 1
    obj["spec"]["template"]["deploymentTemplate"]["spec"]["replicas"] = 1
    obj["spec"]["topology"]["subsets"][2]["name"] = "subset-a"
    obj["spec"]["updateStrategy"]["manualUpdate"]["partitions"]["ghost"] = 0
    assert [f for f, _, _ in triples(obj)] == [
        "spec.template.deploymentTemplate.spec.replicas",
        SUBSETS,
        f"{SUBSETS}[2].name",
        "spec.updateStrategy.manualUpdate.partitions",
    ]


def test_every_subset_fixed_without_spec_replicas_is_allowed() -> None:
    obj = base()
    del obj["spec"]["replicas"]
    obj["spec"]["topology"]["subsets"] = [{"name": "a", "replicas": 2}, {"name": "b",
                                                                         "replicas": 3}]
    obj["spec"]["updateStrategy"] = {"type": "Manual"}
    assert triples(obj) == []


def test_a_minimum_sum_above_spec_replicas_is_allowed() -> None:
    obj = elastic(base(), [(4, None), (4, None)])
    assert triples(obj) == []
