"""Karmada propagation as a feature: what ``spreadbus validate`` and ``spreadbus plan`` run of it.

- CLI: ``spreadbus validate`` checks PropagationPolicies, ClusterPropagationPolicies,
  ResourceBindings, ClusterResourceBindings and Clusters; ``spreadbus plan`` shows
  ``resourceBindings``, one scheduling round of every binding the host holds.
- It declares no planner or webhook side yet: propagation through member clusters is to come.
"""

from __future__ import annotations

from typing import Final

from spreadbus.engine.feature import Feature
from spreadbus.features.propagation.core.model import (
    CLUSTER_GROUP,
    NAME,
    POLICY_GROUP,
    WORK_GROUP,
)
from spreadbus.features.propagation.offline import (
    offline_plan,
    validate_binding_offline,
    validate_cluster_offline,
    validate_policy_offline,
)

FEATURE: Final = Feature(
    name=NAME,
    validators={
        (POLICY_GROUP, "PropagationPolicy"): validate_policy_offline,
        (POLICY_GROUP, "ClusterPropagationPolicy"): validate_policy_offline,
        (WORK_GROUP, "ResourceBinding"): validate_binding_offline,
        (WORK_GROUP, "ClusterResourceBinding"): validate_binding_offline,
        (CLUSTER_GROUP, "Cluster"): validate_cluster_offline,
    },
    offline_plan=offline_plan,
)
