"""A whitelist the planner or the watcher cannot use is a bad setting: exit 2, problems named."""

from __future__ import annotations

import subprocess
import sys

import pytest

from services.planner.settings import PlannerSettings
from services.watcher.settings import WatcherSettings
from spreadbus.runtime.settings import load_settings

SHAPE_ERRORS = '{"workloads": [{"Group": "kubeflow.org", "Kind": 3, "replicasPath": []}]}'


@pytest.mark.parametrize("cls", [PlannerSettings, WatcherSettings])
def test_a_whitelist_of_the_wrong_shape_names_every_bad_field(cls: type) -> None:
    problems = load_settings(cls, env={"SPREADBUS_WORKLOAD_WHITELIST": SHAPE_ERRORS})
    assert isinstance(problems, list)
    (problem,) = problems
    text = str(problem)
    assert "workload_whitelist (from SPREADBUS_WORKLOAD_WHITELIST): not a valid whitelist" in text
    assert "workloads[0].kind: expected string, got number" in text
    assert "workloads[0].replicasPath: expected string, got array" in text
    assert "not JSON" not in text


@pytest.mark.parametrize("cls", [PlannerSettings, WatcherSettings])
def test_a_usable_whitelist_loads(cls: type) -> None:
    good = '{"workloads": [{"Group": "kubeflow.org", "Version": "v1", "Kind": "TFJob"}]}'
    settings = load_settings(cls, env={"SPREADBUS_WORKLOAD_WHITELIST": good})
    assert isinstance(settings, cls)


def test_the_planner_exits_2_on_a_bad_whitelist_without_a_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "services.planner", "--workload-whitelist", "[1]"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "--workload-whitelist" in done.stderr
    assert "expected a JSON object, got array" in done.stderr
