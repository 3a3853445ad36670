"""WorkloadSpread validation: Kruise's paths and messages, one table row per rule."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesemantics.field_errors import FieldError
from spreadbus.features.workloadspread.core.custom_workloads import (
    CustomWorkload,
    GroupKind,
    Whitelist,
    WhitelistError,
    parse_whitelist,
)
from spreadbus.features.workloadspread.core.validation import validate_workloadspread
from tests.workloadspread.core.builders import deployment, subset, workloadspread

JSON = dict[str, Any]

QNAME_ERR = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_ERR = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
    "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def errs(obj: object, **kwargs: Any) -> list[tuple[str, str, str]]:
    return [(e.field, e.type, e.message) for e in validate_workloadspread(obj, **kwargs)]


def test_the_elastic_and_multi_domain_examples_are_valid() -> None:
    elastic = workloadspread(
        subset("ACK", 100, patch={"metadata": {"labels": {"deploy/zone": "ack"}}}),
        subset("ECI"),
        kind="CloneSet",
        api_version="apps.kruise.io/v1alpha1",
    )
    assert errs(elastic) == []
    multi = workloadspread(subset("subset-a", 100), subset("subset-b", 100))
    assert errs(multi) == []


def _ws_with(mutate: Any) -> JSON:
    ws = workloadspread(subset("a", 3), subset("b"))
    mutate(ws)
    return ws


def _set(path: str, value: Any) -> Any:
    def mutate(ws: JSON) -> None:
        target: Any = ws
        parts = path.split(".")
        for part in parts[:-1]:
            target = target[int(part)] if part.isdigit() else target.setdefault(part, {})
        last = parts[-1]
        if last.isdigit():
            target[int(last)] = value
        else:
            target[last] = value

    return mutate


def _del(path: str) -> Any:
    def mutate(ws: JSON) -> None:
        target: Any = ws
        parts = path.split(".")
        for part in parts[:-1]:
            target = target[int(part)] if part.isdigit() else target[part]
        del target[parts[-1]]

    return mutate


CASES: list[tuple[str, Any, list[tuple[str, str, str]]]] = [
    (
        "targetRef missing",
        _del("spec.targetRef"),
        [("spec.targetRef", "Required", "no targetRef defined in WorkloadSpread")],
    ),
    (
        "targetRef apiVersion empty",
        _set("spec.targetRef.apiVersion", ""),
        [("spec.targetRef", "Invalid", "empty TargetReference is not valid for WorkloadSpread.")],
    ),
    (
        "Deployment in the wrong group",
        _set("spec.targetRef.apiVersion", "apps.kruise.io/v1alpha1"),
        [("spec.targetRef", "Invalid", "TargetReference is not valid for Deployment.")],
    ),
    (
        "CloneSet must be apps.kruise.io",
        _set("spec.targetRef", {"apiVersion": "apps/v1", "kind": "CloneSet", "name": "x"}),
        [("spec.targetRef", "Invalid", "TargetReference is not valid for CloneSet.")],
    ),
    (
        "Job must be batch",
        _set("spec.targetRef", {"apiVersion": "apps/v1", "kind": "Job", "name": "x"}),
        [("spec.targetRef", "Invalid", "TargetReference is not valid for Job.")],
    ),
    (
        "unknown kind without a whitelist",
        _set(
            "spec.targetRef", {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "name": "x"}
        ),
        [("spec.targetRef", "Invalid", "TargetReference's GroupKind is not permitted.")],
    ),
    (
        "no subsets",
        _set("spec.subsets", []),
        [("spec.subsets", "Required", "subsets number must >= 1 in WorkloadSpread")],
    ),
    (
        "empty subset name",
        _set("spec.subsets.1.name", ""),
        [("spec.subsets[1].name", "Invalid", "")],
    ),
    (
        "duplicated subset name is reported at the later index",
        _set("spec.subsets.1.name", "a"),
        [("spec.subsets[1].name", "Invalid", "duplicated subset name a")],
    ),
    (
        "Exists with values in the required term (the path names the field as written)",
        _set(
            "spec.subsets.0.requiredNodeSelectorTerm",
            {"matchExpressions": [{"key": "k", "operator": "Exists", "values": ["v"]}]},
        ),
        [
            (
                "spec.subsets[0].requiredNodeSelectorTerm.matchExpressions[0].values",
                "Forbidden",
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )
        ],
    ),
    (
        "In without values and a bad key in the required term",
        _set(
            "spec.subsets.0.requiredNodeSelectorTerm",
            {"matchExpressions": [{"key": "a/b/c", "operator": "In"}]},
        ),
        [
            (
                "spec.subsets[0].requiredNodeSelectorTerm.matchExpressions[0].values",
                "Required",
                "must be specified when `operator` is 'In' or 'NotIn'",
            ),
            (
                "spec.subsets[0].requiredNodeSelectorTerm.matchExpressions[0].key",
                "Invalid",
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and "
                "must start and end with an alphanumeric character (e.g. 'MyName',  or "
                "'my.name',  or '123-abc', regex used for validation is "
                "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain "
                "prefix and '/' (e.g. 'example.com/MyName')",
            ),
        ],
    ),
    (
        "label values are checked in the required term",
        _set(
            "spec.subsets.0.requiredNodeSelectorTerm",
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["-bad"]}]},
        ),
        [
            (
                "spec.subsets[0].requiredNodeSelectorTerm.matchExpressions[0].values[0]",
                "Invalid",
                LABEL_VALUE_ERR,
            )
        ],
    ),
    (
        "Gt needs one value; unknown operator",
        _set(
            "spec.subsets.0.requiredNodeSelectorTerm",
            {
                "matchExpressions": [
                    {"key": "cpu", "operator": "Gt", "values": ["1", "2"]},
                    {"key": "cpu", "operator": "Near"},
                ]
            },
        ),
        [
            (
                "spec.subsets[0].requiredNodeSelectorTerm.matchExpressions[0].values",
                "Required",
                "must be specified single value when `operator` is 'Lt' or 'Gt'",
            ),
            (
                "spec.subsets[0].requiredNodeSelectorTerm.matchExpressions[1].operator",
                "Invalid",
                "not a valid selector operator",
            ),
        ],
    ),
    (
        "matchFields only knows metadata.name with one value",
        _set(
            "spec.subsets.0.requiredNodeSelectorTerm",
            {"matchFields": [{"key": "spec.unschedulable", "operator": "In", "values": []}]},
        ),
        [
            (
                "spec.subsets[0].requiredNodeSelectorTerm.matchFields[0].values",
                "Required",
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
            ),
            (
                "spec.subsets[0].requiredNodeSelectorTerm.matchFields[0].key",
                "Invalid",
                "not a valid field selector key",
            ),
        ],
    ),
    (
        "preferred weight out of range and a preference error (label values not checked)",
        _set(
            "spec.subsets.0.preferredNodeSelectorTerms",
            [
                {
                    "weight": 101,
                    "preference": {
                        "matchExpressions": [
                            {"key": "k", "operator": "Exists", "values": ["-x"]},
                            {"key": "k", "operator": "In", "values": ["-fine-here"]},
                        ]
                    },
                }
            ],
        ),
        [
            (
                "spec.subsets[0].preferredNodeSelectorTerms[0].weight",
                "Invalid",
                "must be in the range 1-100",
            ),
            (
                "spec.subsets[0].preferredNodeSelectorTerms[0].preference.matchExpressions[0].values",
                "Forbidden",
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            ),
        ],
    ),
    (
        "tolerations: empty key needs Exists, seconds need NoExecute, bad effect",
        _set(
            "spec.subsets.0.tolerations",
            [
                {"operator": "Equal", "value": "v", "effect": "NoSchedule", "tolerationSeconds": 5},
                {"key": "k", "operator": "Exists", "value": "v", "effect": "Sometimes"},
                {"key": "k", "operator": "Less"},
                {"key": "Bad Key", "value": "ok"},
            ],
        ),
        [
            (
                "spec.subsets[0].tolerations[0].operator",
                "Invalid",
                'operator must be Exists when `key` is empty, which means "match all values and '
                'all keys"',
            ),
            (
                "spec.subsets[0].tolerations[0].effect",
                "Invalid",
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ),
            (
                "spec.subsets[0].tolerations[1].operator",
                "Invalid",
                "value must be empty when `operator` is 'Exists'",
            ),
            (
                "spec.subsets[0].tolerations[1].effect",
                "NotSupported",
                'supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"',
            ),
            (
                "spec.subsets[0].tolerations[2].operator",
                "NotSupported",
                'supported values: "Equal", "Exists"',
            ),
            ("spec.subsets[0].tolerations[3].key", "Invalid", QNAME_ERR),
        ],
    ),
    (
        "mixed maxReplicas types",
        _set("spec.subsets.1.maxReplicas", "50%"),
        [
            (
                "spec.subsets[1].maxReplicas",
                "Invalid",
                "the maxReplicas type of all subsets must be the same",
            )
        ],
    ),
    (
        "negative maxReplicas",
        _set("spec.subsets.0.maxReplicas", -100),
        [("spec.subsets[0].maxReplicas", "Invalid", "maxReplicas is not valid for subset")],
    ),
    (
        "fractional percent",
        _set("spec.subsets.0.maxReplicas", "0.2%"),
        [("spec.subsets[0].maxReplicas", "Invalid", "maxReplicas is not valid for subset")],
    ),
    (
        "negative percent",
        _set("spec.subsets.0.maxReplicas", "-1%"),
        [("spec.subsets[0].maxReplicas", "Invalid", "maxReplicas is not valid for subset")],
    ),
    (
        "a string that is not a percent",
        _set("spec.subsets.0.maxReplicas", "10"),
        [("spec.subsets[0].maxReplicas", "Invalid", "maxReplicas is not valid for subset")],
    ),
    (
        "bad scheduleStrategy type",
        _set("spec.scheduleStrategy", {"type": "Random"}),
        [("spec.scheduleStrategy.type", "Invalid", "ScheduleStrategy's type is not valid")],
    ),
    (
        "adaptive block with Fixed type",
        _set("spec.scheduleStrategy", {"type": "Fixed", "adaptive": {}}),
        [
            (
                "spec.scheduleStrategy.type",
                "Invalid",
                "the scheduleStrategy's type must be adaptive when using adaptive scheduleStrategy",
            )
        ],
    ),
    (
        "a limited last subset is fine without adaptive",
        _set("spec.subsets.1.maxReplicas", 5),
        [],
    ),
    (
        "targetFilter with In and no values",
        _set(
            "spec.targetFilter",
            {"selector": {"matchExpressions": [{"key": "role", "operator": "In"}]}},
        ),
        [
            (
                "spec.targetFilter",
                "Invalid",
                "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set "
                "can't be empty",
            )
        ],
    ),
    (
        "targetFilter with a bad operator",
        _set(
            "spec.targetFilter",
            {"selector": {"matchExpressions": [{"key": "role", "operator": "Is"}]}},
        ),
        [("spec.targetFilter", "Invalid", '"Is" is not a valid label selector operator')],
    ),
    (
        "targetFilter with only replicasPathList is valid",
        _set("spec.targetFilter", {"replicasPathList": ["spec.replicas"]}),
        [],
    ),
    (
        "minReplicas must be an integer",
        _set("spec.subsets.0.minReplicas", "1%"),
        [("spec.subsets[0].minReplicas", "Invalid", "minReplicas must be an integer")],
    ),
    (
        "minReplicas must not be negative",
        _set("spec.subsets.1.minReplicas", -1),
        [
            (
                "spec.subsets[1].minReplicas",
                "Invalid",
                "minReplicas must be greater than or equal to 0",
            )
        ],
    ),
    (
        "minReplicas must not exceed maxReplicas",
        _set("spec.subsets.0.minReplicas", 4),
        [
            (
                "spec.subsets[0].minReplicas",
                "Invalid",
                "minReplicas must not be greater than maxReplicas",
            )
        ],
    ),
    ("minReplicas equal to maxReplicas is fine", _set("spec.subsets.0.minReplicas", 3), []),
]


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_rule_reports_kruise_path_and_message(mutate: Any, expected: list[Any]) -> None:
    assert errs(_ws_with(mutate)) == expected


def test_v1beta1_field_names_are_validated_under_their_own_names() -> None:
    ws = workloadspread(
        {
            "name": "a",
            "requiredNodeSelector": {"matchExpressions": [{"key": "k", "operator": "In"}]},
            "preferredNodeSelector": [{"weight": 0, "preference": {}}],
        },
        api="apps.kruise.io/v1beta1",
    )
    assert errs(ws) == [
        (
            "spec.subsets[0].requiredNodeSelector.matchExpressions[0].values",
            "Required",
            "must be specified when `operator` is 'In' or 'NotIn'",
        ),
        (
            "spec.subsets[0].preferredNodeSelector[0].weight",
            "Invalid",
            "must be in the range 1-100",
        ),
    ]


@pytest.mark.parametrize(
    ("subsets", "expected"),
    [
        ((20, 30, 50), []),
        (
            (40, 50, 20),
            [
                (
                    "spec.subsets[2].maxReplicas",
                    "the sum of all subset's maxReplicas exceeds 100% is no permitted",
                )
            ],
        ),
        (
            (20, 30, 40),
            [
                (
                    "spec.subsets[0].maxReplicas",
                    "maxReplicas sum of all subsets must equal 100% "
                    "when type is specified as percent",
                )
            ],
        ),
        ((20, 30, None), []),
    ],
    ids=["sum 100", "sum over 100 at that index", "sum under 100", "under 100 with unlimited last"],
)
def test_percent_sums(subsets: tuple[int | None, ...], expected: list[tuple[str, str]]) -> None:
    ws = workloadspread(
        *(subset(f"s{i}", None if p is None else f"{p}%") for i, p in enumerate(subsets))
    )
    assert [(f, m) for f, _, m in errs(ws)] == expected


def test_statefulset_needs_integer_max_replicas() -> None:
    ws = workloadspread(subset("a", "50%"), subset("b", "50%"), kind="StatefulSet")
    assert errs(ws) == [
        (
            "spec.subsets[0].maxReplicas",
            "Invalid",
            "the maxReplicas type must be Int for StatefulSet",
        )
    ]


@pytest.mark.parametrize(("count", "allowed"), [(2, 295), (3, 147), (4, 98)])
def test_reschedule_seconds_cap_depends_on_subset_count(count: int, allowed: int) -> None:
    subsets = [subset(f"s{i}", 5) for i in range(count - 1)] + [subset("last")]
    ok = workloadspread(
        *subsets, strategy={"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": allowed}}
    )
    assert errs(ok) == []
    too_long = workloadspread(
        *subsets,
        strategy={"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": allowed + 1}},
    )
    assert errs(too_long) == [
        (
            "spec.scheduleStrategy.adaptive.rescheduleCriticalSeconds",
            "Invalid",
            f"rescheduleCriticalSeconds < 0 or rescheduleCriticalSeconds > {allowed} "
            "is not permitted",
        )
    ]


def test_adaptive_with_a_limited_last_subset_is_rejected() -> None:
    ws = workloadspread(
        subset("a", 5),
        subset("b", 5),
        strategy={"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 10}},
    )
    assert errs(ws) == [
        (
            "spec.scheduleStrategy.adaptive",
            "Invalid",
            "the last subset's maxReplicas must be not specified "
            "when using adaptive scheduleStrategy",
        )
    ]


def test_whitelisted_custom_kinds_are_permitted() -> None:
    whitelist = parse_whitelist(
        '{"workloads":[{"Group":"argoproj.io","Kind":"Rollout","replicasPath":"spec.replicas"}]}'
    )
    ws = workloadspread(subset("a"), kind="Rollout", api_version="argoproj.io/v1alpha1")
    assert errs(ws, whitelist=whitelist) == []


@pytest.mark.parametrize(
    ("raw", "problems"),
    [
        ("[]", ["expected a JSON object, got array"]),
        (
            "{nope",
            [
                "not valid JSON: Expecting property name enclosed in double quotes: "
                "line 1 column 2 (char 1)"
            ],
        ),
        ('{"workloads": {"Group": "argoproj.io"}}', ["workloads: expected array, got object"]),
        (
            '{"workloads": ["Rollout", {"Kind": "Rollout"}, 3]}',
            [
                "workloads[0]: expected object, got string",
                "workloads[2]: expected object, got number",
            ],
        ),
        (
            '{"workloads": [{"Group": "g", "Kind": 1, "subResources": [{"kind": true}, []]}]}',
            [
                "workloads[0].subResources[1]: expected object, got array",
                "workloads[0].kind: expected string, got number",
                "workloads[0].subResources[0].kind: expected string, got boolean",
            ],
        ),
        (
            '{"workloads": [{"Group": "g", "subResources": "ReplicaSet"}]}',
            ["workloads[0].subResources: expected array, got string"],
        ),
    ],
    ids=[
        "not an object",
        "not JSON",
        "workloads not a list",
        "entries not objects",
        "fields of the wrong type",
        "subResources not a list",
    ],
)
def test_a_whitelist_of_the_wrong_shape_is_refused_naming_every_bad_field(
    raw: str, problems: list[str]
) -> None:
    with pytest.raises(WhitelistError) as caught:
        parse_whitelist(raw)
    assert caught.value.problems == problems
    assert str(caught.value) == "; ".join(problems)


def test_a_whitelist_reads_keys_in_any_case_and_nulls_as_empty() -> None:
    whitelist = parse_whitelist(
        '{"WORKLOADS": [{"group": "kubeflow.org", "KIND": "TFJob", "version": null,'
        ' "SubResources": [{"Group": "kubeflow.org", "Kind": "TFReplica"}]}], "extra": 1}'
    )
    assert whitelist == Whitelist(
        (
            CustomWorkload(
                group="kubeflow.org",
                kind="TFJob",
                sub_resources=(GroupKind("kubeflow.org", "TFReplica"),),
            ),
        )
    )
    assert parse_whitelist('{"workloads": null}') == Whitelist()


def test_two_workloadspreads_may_not_target_the_same_workload() -> None:
    first = workloadspread(subset("a"), name="first")
    second = workloadspread(subset("a"), name="second", api_version="apps/v1beta2")
    elsewhere = workloadspread(subset("a"), name="third", namespace="other")
    assert errs(first, others=[first, elsewhere]) == []
    assert errs(first, others=[elsewhere, second]) == [
        (
            "spec.targetRef",
            "Invalid",
            "ws.spec.targetRef is in conflict with other WorkloadSpread second",
        )
    ]


def test_target_ref_is_immutable_except_for_its_version() -> None:
    old = workloadspread(subset("a"))
    new_version = workloadspread(subset("a"), api_version="apps/v1beta1")
    renamed = workloadspread(subset("a"), target="other")
    assert errs(new_version, old=old) == []
    assert errs(renamed, old=old) == [
        ("spec.targetRef", "Invalid", "change TargetReference is not permitted for WorkloadSpread")
    ]


def test_patches_are_checked_only_when_the_workload_exists() -> None:
    ws = workloadspread(
        subset("a", patch={"spec": {"containers": [{"image": "other"}]}}), subset("b")
    )
    assert errs(ws) == []
    assert errs(ws, workload=deployment()) == [
        (
            "spec.subsets[0].patch",
            "Invalid",
            "failed to merge patch: map: {'image': 'other'} does not contain declared merge key: "
            "name",
        )
    ]
    no_image = workloadspread(
        subset("a", patch={"spec": {"containers": [{"name": "sidecar"}, {"name": "main"}]}})
    )
    assert errs(no_image, workload=deployment()) == [
        ("spec.subsets[0].patch.containers[0].image", "Required", "")
    ]


def test_every_error_is_returned_not_just_the_first() -> None:
    ws = workloadspread(subset("a"), subset("a"), strategy={"type": "Nope"})
    del ws["spec"]["targetRef"]
    assert [e[0] for e in errs(ws)] == [
        "spec.targetRef",
        "spec.subsets[1].name",
        "spec.scheduleStrategy.type",
    ]


def test_wrong_json_types_are_errors_not_exceptions() -> None:
    ws = workloadspread(subset("a"))
    ws["spec"]["subsets"][0]["tolerations"] = "all"
    ws["spec"]["subsets"][0]["maxReplicas"] = 2.5
    assert errs(ws) == [
        ("spec.subsets[0].tolerations", "Invalid", "expected array, got string"),
        ("spec.subsets[0].maxReplicas", "Invalid", "maxReplicas is not valid for subset"),
    ]
    assert errs(None) == [("", "Invalid", "expected object, got null")]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "name",
                    "maxReplicas",
                    "minReplicas",
                    "operator",
                    "key",
                    "values",
                    "weight",
                    "matchExpressions",
                    "matchFields",
                    "preference",
                    "effect",
                    "value",
                    "type",
                    "adaptive",
                    "rescheduleCriticalSeconds",
                    "selector",
                    "apiVersion",
                    "kind",
                ]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@st.composite
def garbled_workloadspreads(draw: st.DrawFn) -> object:
    base = workloadspread(
        subset("a", 3), subset("b"), strategy={"type": "Adaptive", "adaptive": {}}
    )
    obj: Any = copy.deepcopy(base)
    spots = [
        ("spec", "targetRef"),
        ("spec", "subsets"),
        ("spec", "scheduleStrategy"),
        ("spec", "targetFilter"),
        ("spec",),
        (),
    ]
    for _ in range(draw(st.integers(0, 4))):
        spot = draw(st.sampled_from(spots))
        value = draw(json_values)
        if not spot:
            return value
        target: Any = obj
        for part in spot[:-1]:
            target = target.get(part) if isinstance(target, dict) else None
        if isinstance(target, dict):
            target[spot[-1]] = value
    if draw(st.booleans()) and isinstance(obj.get("spec"), dict):
        subsets = obj["spec"].get("subsets")
        if isinstance(subsets, list) and subsets and isinstance(subsets[0], dict):
            subsets[0][
                draw(
                    st.sampled_from(
                        [
                            "requiredNodeSelectorTerm",
                            "tolerations",
                            "preferredNodeSelectorTerms",
                            "maxReplicas",
                            "minReplicas",
                            "patch",
                        ]
                    )
                )
            ] = draw(json_values)
    return obj


garbled_workloads = st.builds(
    lambda spec, kind: {"kind": kind, "spec": spec},
    st.one_of(st.just(deployment()["spec"]), json_values),
    st.sampled_from(["Deployment", "CloneSet", "StatefulSet"]),
)


@settings(max_examples=300, deadline=None)
@given(
    garbled_workloadspreads(),
    st.lists(json_values, max_size=2),
    json_values,
    st.one_of(st.none(), garbled_workloads),
)
def test_validation_never_raises_on_any_input(
    obj: object, others: list[object], old: object, workload: dict[str, Any] | None
) -> None:
    result = validate_workloadspread(obj, others=others, old=old, workload=workload)
    assert isinstance(result, list)
    assert all(isinstance(e, FieldError) for e in result)
