"""Every file in examples/ is a complete manifest set, valid offline, for seed-examples' nodes."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from kubesemantics.node_affinity import node_matches_term
from kubesemantics.tolerations import untolerated_taint
from kubesim.behaviour.topology import load_topology, shipped_topologies
from spreadbus.cli import main
from spreadbus.cli.up import SHIPPED_TOPOLOGIES, add_arguments, kubesim_args
from tests.examples.manifests import (
    EXAMPLES,
    example_files,
    example_id,
    node_terms,
    objects,
    of_kind,
    target_of,
)

FILES = example_files()
SPREAD_FILES = [path for path in FILES if of_kind(path, "WorkloadSpread")]
POLICIES = ("WorkloadSpread", "UnitedDeployment", "PodUnavailableBudget", "WorkloadRebalancer")
KARMADA = ("PropagationPolicy", "ClusterPropagationPolicy", "ResourceBinding",
           "ClusterResourceBinding", "Cluster")
"""Karmada's propagation kinds, which spreadbus validates and plans offline only so far."""
VALIDATED = POLICIES + KARMADA
PLACING_FILES = [path for path in FILES
                 if of_kind(path, "WorkloadSpread") or of_kind(path, "UnitedDeployment")]


def test_there_are_examples_of_every_policy_kind() -> None:
    assert len(SPREAD_FILES) >= 8
    for kind in POLICIES:
        assert any(of_kind(path, kind) for path in FILES), kind


@pytest.mark.parametrize("path", FILES, ids=example_id)
def test_every_object_of_an_example_names_its_api_kind_and_name(path: Path) -> None:
    found = objects(path)
    assert found, "a manifest with no object"
    for obj in found:
        assert isinstance(obj, dict)
        assert obj.get("apiVersion"), obj
        assert obj.get("kind"), obj
        assert obj["metadata"]["name"]


@pytest.mark.parametrize("path", [p for p in FILES if any(of_kind(p, k) for k in VALIDATED)],
                         ids=example_id)
def test_every_policy_of_an_example_passes_spreadbus_validate(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["validate", "-f", str(path)])
    policies = [obj for obj in objects(path) if obj["kind"] in VALIDATED]
    out = capsys.readouterr().out
    if len(policies) == 1:
        assert (code, out) == (0, "allowed\n")
    else:
        named = [f"{o['kind']}/" + "/".join(filter(None, (o["metadata"].get("namespace"),
                                                          o["metadata"]["name"])))
                 for o in policies]
        assert (code, out) == (0, "".join(f"{name}: allowed\n" for name in named))


@pytest.mark.parametrize("path", SPREAD_FILES, ids=example_id)
def test_every_workloadspread_example_holds_the_workload_it_targets_and_its_namespace(
    path: Path,
) -> None:
    target = target_of(path)
    if target.namespace != "default":
        namespaces = [obj["metadata"]["name"] for obj in of_kind(path, "Namespace")]
        assert namespaces == [target.namespace]
        assert objects(path)[0]["kind"] == "Namespace", "the namespace comes first for kubectl"


@pytest.mark.parametrize("path", PLACING_FILES, ids=example_id)
def test_every_subset_of_an_example_has_nodes_in_the_seed_examples_topology(path: Path) -> None:
    nodes = load_topology("seed-examples").nodes("2026-01-01T00:00:00Z")
    terms = list(node_terms(path))
    assert terms, "every example selects nodes"
    for where, term, tolerations in terms:
        fitting = [
            node["metadata"]["name"]
            for node in nodes
            if node_matches_term(node, term)
            and untolerated_taint(node["spec"].get("taints"), tolerations) is None
        ]
        assert fitting, f"{where}: no node of seed-examples takes its pods"


def test_a_zone_no_node_carries_matches_no_node_of_the_topology() -> None:
    nodes = load_topology("seed-examples").nodes("2026-01-01T00:00:00Z")
    term = {"matchExpressions": [
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-z"]}
    ]}
    assert not any(node_matches_term(node, term) for node in nodes)


def test_the_examples_readme_lists_every_example_and_links_only_files_that_exist() -> None:
    readme = (EXAMPLES / "README.md").read_text()
    linked = set(re.findall(r"\]\(([^)#]+\.yaml)\)", readme))
    assert linked == {example_id(path) for path in FILES}


def test_the_examples_readme_marks_the_cloneset_and_uniteddeployment_examples() -> None:
    readme = (EXAMPLES / "README.md").read_text()
    rows = {
        link: row
        for row in readme.splitlines()
        for link in re.findall(r"\]\(([^)#]+\.yaml)\)", row)
    }
    for path in FILES:
        row = rows[example_id(path)]
        kinds = {obj["kind"] for obj in objects(path)}
        if "CloneSet" in kinds:
            assert row.endswith("| needs CloneSet in kubesim |"), row
        elif kinds & set(KARMADA):
            # Propagation across member clusters: in `spreadbus plan`, the seed's rebalancers
            # also live (tests/propagation/test_the_seeds_batch_and_edited_rebalancers_run_on_
            # members.py).
            assert row.endswith(("| offline: `spreadbus plan` |",
                                 "| offline: `spreadbus plan`; live on `spreadbus up --members` |"
                                 )), row
        elif "UnitedDeployment" in kinds:
            # Each runs on the local stack; the row says what it shows there.
            assert row.split("|")[-2].strip().startswith("yes: "), row
        else:
            assert row.endswith("| yes |"), row


def test_up_names_every_topology_kubesim_ships() -> None:
    assert sorted(SHIPPED_TOPOLOGIES) == shipped_topologies()
    assert "seed-examples" in SHIPPED_TOPOLOGIES


def _up_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def test_up_passes_its_topology_to_kubesim_before_the_extra_arguments() -> None:
    assert kubesim_args(_up_args()) == []
    assert kubesim_args(_up_args("--topology", "seed-examples", "--kubesim-arg=--no-events")) == [
        "--topology=seed-examples",
        "--no-events",
    ]


def test_up_names_a_topology_file_by_its_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "mine.yaml").write_text("groups: [{name: a}]\n")
    monkeypatch.chdir(tmp_path)
    assert kubesim_args(_up_args("--topology", "mine.yaml")) == [
        f"--topology={tmp_path / 'mine.yaml'}"
    ]


@pytest.mark.parametrize("example", ["elastic", "multi-domain"])
def test_the_deployment_variant_differs_from_the_seeds_cloneset_one_only_in_the_workload_kind(
    example: str,
) -> None:
    def as_deployment(obj: dict[str, object]) -> dict[str, object]:
        if obj.get("kind") == "CloneSet":
            return {**obj, "apiVersion": "apps/v1", "kind": "Deployment"}
        return obj

    cloneset = objects(EXAMPLES / "workloadspread" / f"{example}-cloneset.yaml")
    deployment = objects(EXAMPLES / "workloadspread" / f"{example}-deployment.yaml")
    for obj in cloneset:
        if obj["kind"] == "WorkloadSpread":
            assert obj["spec"]["targetRef"]["kind"] == "CloneSet"
            obj["spec"]["targetRef"] = as_deployment(obj["spec"]["targetRef"])
    assert [as_deployment(obj) for obj in cloneset] == deployment
