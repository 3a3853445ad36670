"""A feature's settings are flags and variables of exactly the services that use them, composed
when the settings are loaded, plugins' included; the feature reads them as its own model."""

from __future__ import annotations

import argparse
import subprocess
import sys
from typing import Annotated, Final

import pytest

from services.actuator.settings import ActuatorSettings
from services.planner.settings import PlannerSettings
from services.watcher.settings import WatcherSettings
from services.webhook.service import WebhookSettings
from spreadbus.cli import main as spreadbus
from spreadbus.engine.feature import Feature
from spreadbus.engine.feature_service_settings import FeatureServiceSettings
from spreadbus.engine.feature_settings import FeatureSettings, UsedBy
from spreadbus.features.registry import features
from spreadbus.features.workloadspread.feature import FEATURE as WORKLOADSPREAD
from spreadbus.features.workloadspread.settings import WorkloadSpreadSettings
from spreadbus.runtime.settings import (
    ServiceSettings,
    SettingError,
    add_settings_arguments,
    load_settings,
)
from tests.fixtures.generation_feature import PLUGIN, UNDELETABLE, StampSettings

SERVICES: Final = {
    "watcher": WatcherSettings,
    "planner": PlannerSettings,
    "actuator": ActuatorSettings,
    "webhook": WebhookSettings,
}
WORKLOADSPREAD_FIELDS: Final = {
    "watcher": {"workload_whitelist"},
    "planner": {"workload_whitelist", "adaptive_recover_seconds",
                "workloadspread_min_interval_seconds", "rebalance_max_unavailable",
                "repair_unsteered_pods"},
    "actuator": set(),
    "webhook": {"workload_whitelist", "ledger_deadline_seconds"},
}
TFJOB: Final = '{"workloads": [{"Group": "kubeflow.org", "Version": "v1", "Kind": "TFJob"}]}'


class ClashingSettings(FeatureSettings):
    cluster: Annotated[str, UsedBy("planner")] = ""
    """A name the planner already has."""


CLASHING: Final = Feature(name="clashing", settings=ClashingSettings)
CLASHING_PLUGIN: Final = f"{__name__}:CLASHING"


def loaded(cls: type[ServiceSettings], env: dict[str, str]) -> ServiceSettings:
    settings = load_settings(cls, env=env)
    assert isinstance(settings, cls), settings
    return settings


@pytest.mark.parametrize("service", SERVICES)
def test_workloadspread_settings_are_offered_by_exactly_the_services_that_use_them(
    service: str,
) -> None:
    cls = SERVICES[service]
    settings = loaded(cls, {})
    feature_fields = set(WorkloadSpreadSettings.model_fields)
    assert set(type(settings).model_fields) & feature_fields == WORKLOADSPREAD_FIELDS[service]
    assert not set(cls.model_fields) & feature_fields  # added when loaded, not declared


def test_a_feature_setting_is_read_from_its_variable_by_the_service_that_uses_it() -> None:
    settings = loaded(PlannerSettings, {"SPREADBUS_ADAPTIVE_RECOVER_SECONDS": "30"})
    assert isinstance(settings, FeatureServiceSettings)
    own = settings.settings_of(WORKLOADSPREAD)
    assert isinstance(own, WorkloadSpreadSettings)
    assert own.adaptive_recover_seconds == 30.0
    assert own.workloadspread_min_interval_seconds == 0.25


def test_a_feature_sees_defaults_for_the_settings_its_service_does_not_offer() -> None:
    settings = loaded(WatcherSettings, {"SPREADBUS_WORKLOAD_WHITELIST": TFJOB,
                                        "SPREADBUS_ADAPTIVE_RECOVER_SECONDS": "30"})
    assert isinstance(settings, FeatureServiceSettings)
    own = settings.settings_of(WORKLOADSPREAD)
    assert isinstance(own, WorkloadSpreadSettings)
    assert own.adaptive_recover_seconds == 300.0
    assert [w.kind for w in own.whitelist().workloads] == ["TFJob"]


def test_two_loads_of_one_service_compare_equal() -> None:
    env = {"SPREADBUS_WORKLOAD_WHITELIST": TFJOB}
    assert loaded(WebhookSettings, env) == loaded(WebhookSettings, env)


def test_every_bad_setting_is_named_at_once_feature_settings_included() -> None:
    problems = load_settings(WatcherSettings, env={
        "SPREADBUS_HTTP_PORT": "eighty",
        "SPREADBUS_WORKLOAD_WHITELIST": "[1]",
        "SPREADBUS_MODIFIED_HOLD_SECONDS": "-1",
    })
    assert isinstance(problems, list)
    assert sorted(str(p) for p in problems) == [
        "http_port (from SPREADBUS_HTTP_PORT): Input should be a valid integer, unable to "
        "parse string as an integer",
        "modified_hold_seconds (from SPREADBUS_MODIFIED_HOLD_SECONDS): must be >= 0, not -1.0",
        "workload_whitelist (from SPREADBUS_WORKLOAD_WHITELIST): not a valid whitelist: "
        "expected a JSON object, got array",
    ]


def test_a_plugins_setting_is_offered_by_the_services_that_use_it_only() -> None:
    env = {"SPREADBUS_FEATURE_PLUGINS": PLUGIN, "SPREADBUS_UNDELETABLE_LABEL": "keep"}
    webhook = loaded(WebhookSettings, env)
    assert isinstance(webhook, FeatureServiceSettings)
    plugin = webhook.features()[-1]
    own = webhook.settings_of(plugin)
    assert isinstance(own, StampSettings)
    assert own.undeletable_label == "keep"
    planner = loaded(PlannerSettings, env)
    assert "undeletable_label" not in type(planner).model_fields
    assert "undeletable_label" not in type(loaded(WebhookSettings, {})).model_fields


def test_a_plugins_setting_is_a_flag_once_the_command_line_asks_for_the_plugin() -> None:
    argv = [f"--feature-plugins={PLUGIN}", "--undeletable-label", "keep"]
    parser = argparse.ArgumentParser()
    add_settings_arguments(parser, WebhookSettings, argv=argv, env={})
    settings = load_settings(WebhookSettings, parser.parse_args(argv), env={})
    assert isinstance(settings, WebhookSettings)
    own = settings.settings_of(settings.features()[-1])
    assert isinstance(own, StampSettings)
    assert own.undeletable_label == "keep"
    without = argparse.ArgumentParser()
    add_settings_arguments(without, WebhookSettings, argv=argv[2:], env={})
    assert "--undeletable-label" not in without.format_help()


def test_spreadbus_webhook_help_lists_the_flags_of_the_plugins_it_is_given() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "spreadbus", "webhook", "--feature-plugins", PLUGIN, "--help"],
        capture_output=True, text=True, timeout=60, check=True,
    )
    text = " ".join(done.stdout.split())
    assert (f"--undeletable-label UNDELETABLE_LABEL Pods with this label set to \"true\" may not "
            f"be deleted. (env SPREADBUS_UNDELETABLE_LABEL; default '{UNDELETABLE}')") in text


def test_a_plugin_whose_setting_a_service_already_has_is_a_bad_setting() -> None:
    assert [f.name for f in features([CLASHING_PLUGIN])][-1] == "clashing"
    problems = load_settings(PlannerSettings, env={"SPREADBUS_FEATURE_PLUGINS": CLASHING_PLUGIN})
    assert problems == [SettingError(
        "feature_plugins", "SPREADBUS_FEATURE_PLUGINS",
        "setting 'cluster' of feature 'clashing' is already a setting of the planner",
    )]
    # The watcher does not use the clashing setting, so it runs the plugin.
    assert isinstance(load_settings(WatcherSettings, env={
        "SPREADBUS_FEATURE_PLUGINS": CLASHING_PLUGIN}), WatcherSettings)


@pytest.mark.parametrize("service", ["watcher", "planner", "webhook"])
def test_the_help_of_a_service_lists_its_feature_settings_with_their_docstrings(
    service: str, capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        spreadbus([service, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for name in WORKLOADSPREAD_FIELDS[service]:
        doc = " ".join((WorkloadSpreadSettings.model_fields[name].description or "").split())
        assert doc
        flag = "--" + name.replace("_", "-")
        assert f"{flag} {name.upper()} {doc} (env SPREADBUS_{name.upper()};" in text
