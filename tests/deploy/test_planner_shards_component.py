"""The planner-shards component: three planner Deployments, shards 0 to 2 of 3, each the base
planner but for its shard number and its own selector, with a disruption budget each; the shared
ConfigMap gives the count to the planners and to the setup Job, and each shard's settings load."""

from __future__ import annotations

import copy
import os
import subprocess
from typing import Any

import pytest
import yaml

from events.shards import Shards
from services.planner.settings import PlannerSettings
from spreadbus.cli.bus_setup import BusSetupSettings
from spreadbus.runtime.settings import load_settings

from .conftest import KUBECTL, ROOT

SHARD_LABEL = "spreadbus.io/planner-shard"


@pytest.fixture(scope="module")
def sharded(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """deploy/ with the component, through an overlay as a user writes one."""
    overlay = tmp_path_factory.mktemp("overlay")
    base = os.path.relpath(ROOT / "deploy", overlay)
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [base], "components": [f"{base}/components/planner-shards"],
    }))
    out = subprocess.run([str(KUBECTL), "kustomize", str(overlay)], check=True,
                         capture_output=True, text=True, timeout=60).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def planners(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == "Deployment"
            and d["metadata"]["name"].startswith("spreadbus-planner")]


def config(docs: list[dict[str, Any]]) -> dict[str, str]:
    (found,) = [d for d in docs if d["kind"] == "ConfigMap"
                and d["metadata"]["name"] == "spreadbus-config"]
    data: dict[str, str] = found["data"]
    return data


def environment(docs: list[dict[str, Any]], deployment: dict[str, Any]) -> dict[str, str]:
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    return {**config(docs), **{e["name"]: e["value"] for e in container.get("env", [])}}


def test_every_shard_is_the_base_planner_but_for_its_number_and_selector(
    sharded: list[dict[str, Any]], rendered: list[dict[str, Any]],
) -> None:
    (base,) = planners(rendered)
    shards = planners(sharded)
    assert [d["metadata"]["name"] for d in shards] == [
        "spreadbus-planner", "spreadbus-planner-1", "spreadbus-planner-2"]
    for index, deployment in enumerate(shards):
        spec = deployment["spec"]
        assert spec["selector"]["matchLabels"] == {
            "app.kubernetes.io/name": "spreadbus-planner", SHARD_LABEL: str(index)}
        assert spec["template"]["metadata"]["labels"][SHARD_LABEL] == str(index)
        assert spec["replicas"] == 2  # a leader and a standby
        settings = load_settings(PlannerSettings, env=environment(sharded, deployment))
        assert isinstance(settings, PlannerSettings), settings
        assert settings.shard_of == Shards(3, index)
        assert _without_shard(deployment) == _without_shard(base)


def test_the_setup_job_creates_the_stream_of_three_shards(
    sharded: list[dict[str, Any]],
) -> None:
    settings = load_settings(BusSetupSettings, env=config(sharded))
    assert isinstance(settings, BusSetupSettings), settings
    assert settings.shards == 3


def test_each_shard_keeps_a_replica_through_a_voluntary_disruption(
    sharded: list[dict[str, Any]],
) -> None:
    budgets = {d["metadata"]["name"]: d["spec"]["selector"]["matchLabels"] for d in sharded
               if d["kind"] == "PodDisruptionBudget"
               and d["metadata"]["name"].startswith("spreadbus-planner")}
    assert budgets == {
        name: {"app.kubernetes.io/name": "spreadbus-planner", SHARD_LABEL: str(index)}
        for index, name in enumerate(("spreadbus-planner", "spreadbus-planner-1",
                                      "spreadbus-planner-2"))}


def _without_shard(deployment: dict[str, Any]) -> dict[str, Any]:
    """The Deployment with its name, shard label and shard variable taken out."""
    copied = copy.deepcopy(deployment)
    copied["metadata"]["name"] = "spreadbus-planner"
    spec = copied["spec"]
    template = spec["template"]
    for labels in (copied["metadata"]["labels"], spec["selector"]["matchLabels"],
                   template["metadata"]["labels"],
                   template["spec"]["affinity"]["podAntiAffinity"][
                       "preferredDuringSchedulingIgnoredDuringExecution"][0][
                       "podAffinityTerm"]["labelSelector"]["matchLabels"]):
        labels.pop(SHARD_LABEL, None)
    container = template["spec"]["containers"][0]
    container["env"] = [e for e in container.get("env", []) if e["name"] != "SPREADBUS_SHARD"]
    if not container["env"]:
        del container["env"]
    return copied
