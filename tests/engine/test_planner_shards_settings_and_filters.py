"""Planner shards: the settings refuse a shard outside the count, naming it; the partition is
NATS' (FNV-1a of the token, modulo the count); a shard's filters never overlap."""

from __future__ import annotations

import pytest

from events import subjects
from events.shards import CLUSTER_SCOPED, Shards, partition, shard_filters, shard_stream
from services.planner.planner import planner_name
from services.planner.service import lease_key
from services.planner.settings import PlannerSettings
from spreadbus.engine.feature_set import bus_accesses
from spreadbus.features.registry import BUILTIN
from spreadbus.runtime.bus_layout import bus_layout, service_needs
from spreadbus.runtime.bus_permissions import permissions
from spreadbus.runtime.settings import SettingError, load_settings


def test_shards_and_shard_come_from_the_environment() -> None:
    settings = load_settings(PlannerSettings, env={"SPREADBUS_SHARDS": "3",
                                                   "SPREADBUS_SHARD": "2",
                                                   "SPREADBUS_CLUSTER": "east"})
    assert isinstance(settings, PlannerSettings)
    assert settings.shard_of == Shards(3, 2)
    assert lease_key(settings) == "planner.east.shard-2-of-3"
    assert planner_name("east", settings.shard_of) == "planner.east.shard-2-of-3"


def test_one_shard_keeps_the_lease_and_snapshot_names_of_an_unsharded_planner() -> None:
    settings = load_settings(PlannerSettings, env={"SPREADBUS_CLUSTER": "east"})
    assert isinstance(settings, PlannerSettings)
    assert lease_key(settings) == "planner.east"
    assert planner_name("east", settings.shard_of) == "planner.east"


@pytest.mark.parametrize(("env", "field"), [
    ({"SPREADBUS_SHARDS": "3", "SPREADBUS_SHARD": "3"}, "shard"),
    ({"SPREADBUS_SHARDS": "0"}, "shards"),
    ({"SPREADBUS_SHARD": "-1"}, "shard"),
])
def test_a_shard_outside_the_count_is_a_clear_error(env: dict[str, str], field: str) -> None:
    errors = load_settings(PlannerSettings, env=env)
    assert isinstance(errors, list)
    assert errors
    assert all(isinstance(e, SettingError) for e in errors)
    assert [e.field for e in errors] == [field], errors


def test_the_partition_is_fnv1a_modulo_the_count() -> None:
    # FNV-1a 32 of "a" is 0xe40c292c (the published test vector).
    assert partition("a", 1 << 31) == 0xE40C292C % (1 << 31)
    assert partition("", 7) == 0x811C9DC5 % 7
    assert all(sum(Shards(4, i).owns(f"ns-{k}") for i in range(4)) == 1 for k in range(50))


def test_a_shards_filters_do_not_overlap_and_cover_its_partition_and_the_cluster() -> None:
    home = partition(CLUSTER_SCOPED, 3)
    for index in range(3):
        filters = shard_filters("c1", Shards(3, index))
        assert len(filters) == (2 if index == home else 3)
        assert filters[0] == f"kube-shards-3.{index}.c1.>"
        assert filters[-1] == f"{subjects.SYNC}.c1.>"
        for a in filters:
            for b in filters:
                assert a == b or not _may_overlap(a, b)


def test_the_shard_stream_sources_kube_through_the_partition_function() -> None:
    spec = shard_stream(4)
    assert spec.name == "KUBE_SHARDS_4"
    assert spec.sources == ("KUBE",)
    assert spec.max_msgs_per_subject == 1
    assert spec.allow_msg_ttl
    (obs_src, obs_dest), (sync_src, sync_dest) = spec.source_transforms
    assert obs_src == "kube.obs.*.*.*.*.*"
    assert obs_dest.startswith("kube-shards-4.{{partition(4,4)}}.")
    assert sync_src == sync_dest == "kube.sync.>"
    with pytest.raises(ValueError, match="shards must be between"):
        shard_stream(0)


def _may_overlap(a: str, b: str) -> bool:
    left, right = a.split("."), b.split(".")
    for x, y in zip(left, right, strict=False):
        if ">" in (x, y):
            return True
        if "*" not in (x, y) and x != y:
            return False
    return len(left) == len(right)


def test_sharded_planners_may_read_their_stream_and_not_kube() -> None:
    accesses = bus_accesses(BUILTIN)
    single = permissions("planner", accesses)["publish"]["allow"]
    sharded = permissions("planner", accesses, shards=3)["publish"]["allow"]
    assert "$JS.API.CONSUMER.MSG.NEXT.KUBE.*" in single
    assert "$JS.API.CONSUMER.MSG.NEXT.KUBE.*" not in sharded
    assert "$JS.API.CONSUMER.MSG.NEXT.KUBE_SHARDS_3.*" in sharded
    assert "$JS.API.STREAM.INFO.KUBE" in sharded  # every service checks the core streams
    assert "KUBE_SHARDS_3" not in " ".join(single)
    assert {s.replace("KUBE_SHARDS_3", "KUBE") for s in sharded} == set(single)
    for user in ("watcher", "webhook", "actuator", "reader"):
        assert permissions(user, accesses, shards=3) == permissions(user, accesses)
    layout = bus_layout([], history_max_age=60, history_max_bytes=1 << 20, shards=3)
    assert "KUBE_SHARDS_3" in layout.names()
    assert "KUBE_SHARDS_3" not in bus_layout([], history_max_age=60,
                                             history_max_bytes=1 << 20).names()
    assert "KUBE_SHARDS_3" in service_needs("planner", accesses, shards=3)
