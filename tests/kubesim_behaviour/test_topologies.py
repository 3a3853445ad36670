"""Topology files: the shipped ones, custom ones, and the errors bad ones get."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import pytest

from kubesim.behaviour import add_arguments, build_behaviours, settings_from_args
from kubesim.behaviour.topology import TopologyError, load_topology, parse_topology


def test_the_default_topology_is_three_zones_of_four_nodes() -> None:
    topology = load_topology(None)
    zones = Counter(
        n["metadata"]["labels"]["topology.kubernetes.io/zone"]
        for n in topology.nodes("2026-01-01T00:00:00Z")
    )
    assert zones == {"zone-a": 4, "zone-b": 4, "zone-c": 4}


def test_the_elastic_topology_has_a_fixed_pool_and_tainted_virtual_nodes() -> None:
    nodes = load_topology("elastic").nodes("2026-01-01T00:00:00Z")
    fixed = [n for n in nodes if n["metadata"]["labels"]["node.kubernetes.io/pool"] == "fixed"]
    elastic = [n for n in nodes if n["metadata"]["labels"]["node.kubernetes.io/pool"] == "elastic"]
    assert fixed
    assert elastic
    assert all("taints" not in n["spec"] for n in fixed)
    assert all(
        n["spec"]["taints"]
        == [{"key": "virtual-kubelet.io/provider", "value": "alibabacloud", "effect": "NoSchedule"}]
        for n in elastic
    )


def test_the_benchmark_topology_has_a_hundred_nodes() -> None:
    assert len(load_topology("bench-100").node_names()) == 100


def test_a_custom_file_describes_groups_of_nodes(tmp_path: Path) -> None:
    path = tmp_path / "arm.yaml"
    path.write_text(
        "groups:\n"
        "  - name: arm\n"
        "    count: 2\n"
        "    labels: {kubernetes.io/arch: arm64}\n"
        "    allocatable: {cpu: 500m, memory: 1Gi, pods: 5}\n"
        "    unschedulable: true\n"
    )
    nodes = load_topology(path).nodes("2026-01-01T00:00:00Z")
    assert [n["metadata"]["name"] for n in nodes] == ["arm-1", "arm-2"]
    assert nodes[0]["metadata"]["labels"]["kubernetes.io/arch"] == "arm64"
    assert nodes[0]["status"]["allocatable"] == {"cpu": "500m", "memory": "1Gi", "pods": "5"}
    assert nodes[0]["spec"]["unschedulable"] is True


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({}, "groups"),
        ({"groups": [{"count": 1}]}, "groups[0].name"),
        ({"groups": [{"name": "a", "count": -1}]}, "groups[0].count"),
        (
            {"groups": [{"name": "a", "taints": [{"key": "k", "effect": "Sometimes"}]}]},
            "groups[0].taints[0].effect",
        ),
        ({"groups": [{"name": "a", "allocatable": {"cpu": "lots"}}]}, "groups[0].allocatable.cpu"),
        ({"groups": [{"name": "a", "count": 2}, {"name": "a"}]}, "groups"),
    ],
)
def test_a_bad_topology_names_the_field(document: object, field: str) -> None:
    with pytest.raises(TopologyError) as error:
        parse_topology(document)
    assert str(error.value).startswith(f"{field}:")


def test_flags_carry_topology_and_delays_and_a_missing_file_exits_cleanly() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--topology", "elastic", "--ready-delay", "0.5"])
    settings = settings_from_args(args)
    assert settings.topology == "elastic"
    assert settings.ready_delay == 0.5
    assert settings.events is True
    assert settings_from_args(parser.parse_args(["--no-events"])).events is False
    assert len(build_behaviours(args)) == 3
    assert build_behaviours(parser.parse_args(["--no-behaviour"])) == []
    assert build_behaviours(parser.parse_args(["--control-plane"])) == []
    with pytest.raises(SystemExit, match="no-such-topology"):
        build_behaviours(parser.parse_args(["--topology", "no-such-topology"]))
