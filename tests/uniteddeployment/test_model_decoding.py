"""The UnitedDeployment as decoded from the JSON the API server holds.

Subset replica fields keep whatever was written, so the allocators can give unparsable values the
meaning Kruise gives them; other fields of the wrong type read as absent.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import yaml

from spreadbus.features.uniteddeployment.core.allocation import (
    Allocator,
    allocate,
    allocator_for,
)
from spreadbus.features.uniteddeployment.core.model import from_object

_DOCUMENTED_SAMPLE = """
apiVersion: apps.kruise.io/v1alpha1
kind: UnitedDeployment
metadata:
  name: sample-ud
spec:
  replicas: 6
  revisionHistoryLimit: 10
  selector:
    matchLabels:
      app: sample
  template:
    statefulSetTemplate:
      metadata:
        labels:
          app: sample
      spec:
        selector:
          matchLabels:
            app: sample
        template:
          metadata:
            labels:
              app: sample
          spec:
            containers:
            - image: nginx:alpine
              name: nginx
  topology:
    subsets:
    - name: subset-a
      nodeSelectorTerm:
        matchExpressions:
        - key: node
          operator: In
          values:
          - zone-a
      replicas: 1
    - name: subset-b
      nodeSelectorTerm:
        matchExpressions:
        - key: node
          operator: In
          values:
          - zone-b
      replicas: 50%
    - name: subset-c
      nodeSelectorTerm:
        matchExpressions:
        - key: node
          operator: In
          values:
          - zone-c
  updateStrategy:
    manualUpdate:
      partitions:
        subset-a: 0
        subset-b: 0
        subset-c: 0
    type: Manual
"""


def test_the_documented_sample_decodes_and_splits_one_three_two() -> None:
    ud = from_object(yaml.safe_load(_DOCUMENTED_SAMPLE))

    assert (ud.namespace, ud.name, ud.replicas, ud.revision_history_limit) == (
        "default",
        "sample-ud",
        6,
        10,
    )
    assert ud.template_kinds == ("statefulSetTemplate",)
    assert [s.replicas for s in ud.subsets] == [1, "50%", None]
    assert ud.subsets[0].node_selector_term == {
        "matchExpressions": [{"key": "node", "operator": "In", "values": ["zone-a"]}]
    }
    assert ud.update_strategy.type == "Manual"
    assert ud.update_strategy.partitions == {"subset-a": 0, "subset-b": 0, "subset-c": 0}
    assert allocator_for(ud) is Allocator.SPECIFIC
    assert allocate(ud, {}) == {"subset-a": 1, "subset-b": 3, "subset-c": 2}


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("lots", id="a-word"),
        pytest.param(2.5, id="a-fraction"),
        pytest.param(True, id="a-boolean"),
        pytest.param([1], id="a-list"),
        pytest.param(-4, id="a-negative-integer"),
    ],
)
def test_subset_replica_fields_are_kept_as_written(value: object) -> None:
    ud = from_object(
        {
            "metadata": {"name": "u"},
            "spec": {
                "topology": {
                    "subsets": [
                        {"name": "a", "replicas": value, "minReplicas": value, "maxReplicas": value}
                    ]
                }
            },
        }
    )

    subset = ud.subsets[0]
    assert (subset.replicas, subset.min_replicas, subset.max_replicas) == (value, value, value)


def test_a_null_bound_is_unset() -> None:
    ud = from_object(
        {
            "spec": {
                "topology": {"subsets": [{"name": "a", "minReplicas": None, "maxReplicas": None}]}
            }
        }
    )

    assert not ud.subsets[0].elastic


def test_fields_of_the_wrong_type_read_as_absent() -> None:
    ud = from_object(
        {
            "metadata": {"name": 3, "namespace": ["x"], "generation": "2"},
            "spec": {
                "replicas": "6",
                "template": ["statefulSetTemplate"],
                "revisionHistoryLimit": True,
                "topology": {"subsets": [{"name": "a"}, "b", None], "scheduleStrategy": "Adaptive"},
                "updateStrategy": {"manualUpdate": {"partitions": {"a": "1", "b": 2}}},
            },
            "status": {"collisionCount": "1", "subsetStatuses": {"name": "a"}},
        }
    )

    assert (ud.name, ud.namespace, ud.generation) == ("", "default", 0)
    assert ud.replicas is None
    assert ud.template == {}
    assert ud.revision_history_limit is None
    assert [s.name for s in ud.subsets] == ["a"]
    assert not ud.schedule_strategy.adaptive
    assert ud.update_strategy.partitions == {"b": 2}
    assert ud.status.collision_count is None
    assert ud.status.subset_statuses == ()


def test_the_schedule_strategy_and_its_use_time_defaults() -> None:
    fixed = from_object({"spec": {}})
    reserving = from_object(
        {
            "spec": {
                "topology": {
                    "scheduleStrategy": {
                        "type": "Adaptive",
                        "adaptive": {
                            "rescheduleCriticalSeconds": 10,
                            "reserveUnschedulablePods": True,
                        },
                    }
                }
            }
        }
    )

    assert (
        fixed.schedule_strategy.reschedule_critical,
        fixed.schedule_strategy.unschedulable_duration,
    ) == (30, 300)
    assert not fixed.schedule_strategy.adaptive
    assert reserving.schedule_strategy.reservation
    assert reserving.schedule_strategy.reschedule_critical == 10
    assert reserving.schedule_strategy.unschedulable_duration == 300


def test_the_status_keeps_collision_count_revision_and_subset_conditions() -> None:
    ud = from_object(
        {
            "status": {
                "collisionCount": 2,
                "currentRevision": "sample-ud-7f8678cb95",
                "subsetStatuses": [
                    {
                        "name": "subset-a",
                        "conditions": [
                            {
                                "type": "Schedulable",
                                "status": "False",
                                "reason": "reschedule",
                                "message": "timeout pending pods found",
                                "lastTransitionTime": "2026-01-02T03:04:05Z",
                            }
                        ],
                    }
                ],
            }
        }
    )

    assert ud.status.collision_count == 2
    assert ud.status.current_revision == "sample-ud-7f8678cb95"
    status = ud.status.subset_status("subset-a")
    assert status is not None
    condition = status.condition("Schedulable")
    assert condition is not None
    assert (condition.status, condition.reason) == ("False", "reschedule")
    assert condition.last_transition_time == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
