"""The shipped example manifests as the tests read them: files, their objects, what they target."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
JSON = dict[str, Any]


def example_files() -> list[Path]:
    return sorted(EXAMPLES.rglob("*.yaml"))


def example_id(path: Path) -> str:
    return str(path.relative_to(EXAMPLES))


def objects(path: Path) -> list[JSON]:
    """The file's objects in order; an empty document (a trailing ``---``) is no object."""
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def of_kind(path: Path, kind: str) -> list[JSON]:
    return [obj for obj in objects(path) if obj.get("kind") == kind]


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


@dataclass(frozen=True)
class Target:
    """The workload a WorkloadSpread names: what kubectl and the label selector need of it."""

    kind: str
    name: str
    namespace: str
    app: str
    """The ``app`` label of its pods."""

    @property
    def resource(self) -> str:
        """``kubectl scale`` and ``patch`` spelling: ``deployment/NAME``, ``cloneset/NAME``."""
        return f"{self.kind.lower()}/{self.name}"


def target_of(path: Path) -> Target:
    """The workload the file's WorkloadSpread targets, read from the file itself."""
    (spread,) = of_kind(path, "WorkloadSpread")
    ref = spread["spec"]["targetRef"]
    namespace = spread["metadata"].get("namespace", "default")
    for obj in objects(path):
        meta = obj["metadata"]
        if (
            obj["kind"] == ref["kind"]
            and meta["name"] == ref["name"]
            and meta.get("namespace", "default") == namespace
            and group_of(obj["apiVersion"]) == group_of(ref["apiVersion"])
        ):
            labels = obj["spec"]["template"]["metadata"]["labels"]
            return Target(obj["kind"], meta["name"], namespace, labels["app"])
    raise AssertionError(f"{example_id(path)}: no {ref['kind']} {ref['name']} beside its spread")


def node_terms(path: Path) -> Iterator[tuple[str, JSON, list[JSON]]]:
    """Every node selector term the file's spreads select on: (where, term, its tolerations)."""
    for spread in of_kind(path, "WorkloadSpread"):
        for subset in spread["spec"]["subsets"]:
            where = f"{spread['metadata']['name']}/{subset['name']}"
            tolerations = subset.get("tolerations") or []
            if "requiredNodeSelectorTerm" in subset:
                yield where, subset["requiredNodeSelectorTerm"], tolerations
            for preferred in subset.get("preferredNodeSelectorTerms") or []:
                yield f"{where} (preferred)", preferred["preference"], tolerations
    for united in of_kind(path, "UnitedDeployment"):
        for subset in united["spec"]["topology"]["subsets"]:
            where = f"{united['metadata']['name']}/{subset['name']}"
            yield where, subset["nodeSelectorTerm"], subset.get("tolerations") or []


def scaled_down(path: Path, *, replicas: int, max_replicas: int) -> str:
    """The file's objects as YAML with the workload's replicas and every subset's maxReplicas
    set lower, so an example written for hundreds of pods shows its effect with a few."""
    found = objects(path)
    target = target_of(path)
    for obj in found:
        if obj["kind"] == "WorkloadSpread":
            for subset in obj["spec"]["subsets"]:
                if "maxReplicas" in subset:
                    subset["maxReplicas"] = max_replicas
        elif obj["kind"] == target.kind and obj["metadata"]["name"] == target.name:
            obj["spec"]["replicas"] = replicas
    return yaml.safe_dump_all(found, sort_keys=False)
