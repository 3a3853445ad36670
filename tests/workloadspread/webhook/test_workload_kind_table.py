"""One table of workload kinds: what the watcher streams is what the core can target and count."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from services.watcher.settings import WatcherSettings
from spreadbus.features.workloadspread.core.custom_workloads import (
    BUILTIN_KINDS,
    Whitelist,
    parse_whitelist,
)
from spreadbus.features.workloadspread.core.model import from_object
from spreadbus.features.workloadspread.core.target import workload_replicas
from spreadbus.features.workloadspread.core.workload_kinds import (
    BUILTIN,
    WorkloadKind,
    default_plural,
    workload_kinds,
)
from spreadbus.features.workloadspread.planning.spread_index import OPTIONAL_WORKLOADS, WORKLOADS
from spreadbus.runtime.settings import SettingError, load_settings

TFJOB = {
    "Group": "kubeflow.org",
    "Version": "v1",
    "Kind": "TFJob",
    "replicasPath": "spec.replicas",
    "subResources": [
        {"Group": "kubeflow.org", "Version": "v1", "Kind": "TFReplica"},
        {"Group": "apps", "Version": "v1", "Kind": "ReplicaSet"},
        {"Group": "elsewhere.io", "Version": "v1", "Kind": "Unlocatable"},
    ],
}


def test_the_table_holds_exactly_the_kinds_the_core_accepts_as_targets() -> None:
    table = {(k.group, k.kind) for k in BUILTIN}
    accepted = {(group, kind) for kind, groups in BUILTIN_KINDS.items() for group in groups}
    assert table == accepted


def _set_path(obj: dict[str, Any], path: str, value: int) -> dict[str, Any]:
    *parents, last = path.split(".")
    node = obj
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
    return obj


@given(st.integers(min_value=0, max_value=10_000))
def test_the_tables_replica_path_is_where_the_core_reads_the_count(count: int) -> None:
    for kind in BUILTIN:
        api_version = f"{kind.group}/{kind.version}"
        ws = from_object(
            {
                "apiVersion": "apps.kruise.io/v1alpha1",
                "kind": "WorkloadSpread",
                "metadata": {"name": "ws", "namespace": "default"},
                "spec": {
                    "targetRef": {"apiVersion": api_version, "kind": kind.kind, "name": "w"},
                    "subsets": [{"name": "a", "maxReplicas": "50%"}],
                },
            }
        )
        workload = _set_path(
            {"apiVersion": api_version, "kind": kind.kind}, kind.replicas_path, count
        )
        assert workload_replicas(ws, workload, whitelist=Whitelist()) == count, kind


def test_a_whitelisted_workload_and_its_locatable_sub_kinds_join_the_table() -> None:
    kinds = workload_kinds(parse_whitelist(json.dumps({"workloads": [TFJOB]})))
    tfjob = kinds.find("kubeflow.org", "TFJob")
    assert tfjob is not None
    assert (tfjob.resource, tfjob.version, tfjob.replicas_path, tfjob.custom) == (
        "tfjobs",
        "v1",
        "spec.replicas",
        True,
    )
    replica = kinds.find("kubeflow.org", "TFReplica")
    assert replica is not None
    assert replica.spec == "kubeflow.org/v1/tfreplicas"
    assert kinds.find("apps", "ReplicaSet") == next(k for k in BUILTIN if k.kind == "ReplicaSet")
    assert kinds.find("elsewhere.io", "Unlocatable") is None


def test_default_plurals_follow_the_api_servers_rule() -> None:
    assert [default_plural(k) for k in ("TFJob", "Policy", "Ingress", "GameServerSet")] == [
        "tfjobs",
        "policies",
        "ingresses",
        "gameserversets",
    ]


def test_the_watcher_streams_every_kind_of_the_table_by_default() -> None:
    settings = load_settings(WatcherSettings, env={})
    assert isinstance(settings, WatcherSettings)
    for kind in BUILTIN:
        assert kind.spec in settings.resources
    assert "batch/v1/jobs" in settings.resources
    assert "apps.kruise.io/v1alpha1/clonesets" in settings.resources


def test_the_watcher_adds_whitelisted_workloads_even_to_an_explicit_resource_list() -> None:
    settings = load_settings(
        WatcherSettings,
        env={
            "SPREADBUS_RESOURCES": "v1/pods,apps/v1/deployments",
            "SPREADBUS_WORKLOAD_WHITELIST": json.dumps({"workloads": [TFJOB]}),
        },
    )
    assert isinstance(settings, WatcherSettings)
    assert settings.resources == (
        "v1/pods",
        "apps/v1/deployments",
        "kubeflow.org/v1/tfjobs",
        "kubeflow.org/v1/tfreplicas",
    )


def test_a_whitelist_that_is_not_json_is_a_setting_error() -> None:
    problems = load_settings(WatcherSettings, env={"SPREADBUS_WORKLOAD_WHITELIST": "{nope"})
    assert isinstance(problems, list)
    assert all(isinstance(p, SettingError) for p in problems)
    assert "workload_whitelist" in str(problems[0])


def test_the_planner_waits_for_the_always_served_kinds_and_uses_the_others_when_streamed() -> None:
    def coordinates(kinds: list[WorkloadKind]) -> dict[tuple[str, str], tuple[str, str, str]]:
        return {(k.group, k.kind): (k.group, k.version, k.resource) for k in kinds}

    def refs(table: dict[tuple[str, str], Any]) -> dict[tuple[str, str], tuple[str, str, str]]:
        return {gk: (ref.group, ref.version, ref.resource) for gk, ref in table.items()}

    assert refs(WORKLOADS) == coordinates([k for k in BUILTIN if k.always_served])
    assert refs(OPTIONAL_WORKLOADS) == coordinates([k for k in BUILTIN if not k.always_served])
