"""A plain watcher puts no ConfigMap on the bus; with ``--propagate-configmaps=true`` (or
``SPREADBUS_PROPAGATE_CONFIGMAPS``), as ``spreadbus up --members`` runs the host's and every
member's, it watches them, even beside an explicit ``--resources``. Only the watcher offers the
setting; the workload templates are watched either way."""

from __future__ import annotations

import argparse

import pytest

from services.actuator.settings import ActuatorSettings
from services.planner.settings import PlannerSettings
from services.watcher.settings import WatcherSettings
from spreadbus.features.propagation.planning.rule import PropagationRule
from spreadbus.runtime.settings import add_settings_arguments, load_settings

CONFIGMAPS = "v1/configmaps"


def watcher(argv: list[str], env: dict[str, str] | None = None) -> WatcherSettings:
    parser = argparse.ArgumentParser()
    add_settings_arguments(parser, WatcherSettings, argv=argv, env=env or {})
    settings = load_settings(WatcherSettings, parser.parse_args(argv), env=env or {})
    assert isinstance(settings, WatcherSettings), settings
    return settings


def test_a_plain_watcher_watches_no_configmaps() -> None:
    resources = watcher([]).resources
    assert CONFIGMAPS not in resources
    assert "apps/v1/deployments" in resources
    assert "policy.karmada.io/v1alpha1/propagationpolicies" in resources


@pytest.mark.parametrize(("argv", "env"), [
    (["--propagate-configmaps=true"], {}),
    ([], {"SPREADBUS_PROPAGATE_CONFIGMAPS": "true"}),
])
def test_propagating_watchers_watch_configmaps(argv: list[str], env: dict[str, str]) -> None:
    assert CONFIGMAPS in watcher(argv, env).resources


def test_the_setting_adds_configmaps_to_named_resources() -> None:
    assert watcher(["--resources=v1/pods"]).resources == ("v1/pods",)
    assert watcher(["--resources=v1/pods", "--propagate-configmaps=true"]).resources == (
        "v1/pods", CONFIGMAPS)
    assert watcher(["--propagate-configmaps=false"]).resources == watcher([]).resources


def test_a_bad_value_is_a_bad_setting_naming_the_flag() -> None:
    parser = argparse.ArgumentParser()
    add_settings_arguments(parser, WatcherSettings, argv=[], env={})
    problems = load_settings(WatcherSettings,
                             parser.parse_args(["--propagate-configmaps=sometimes"]), env={})
    assert isinstance(problems, list)
    assert "propagate_configmaps" in str(problems[0])


@pytest.mark.parametrize("cls", [PlannerSettings, ActuatorSettings])
def test_only_the_watcher_offers_the_setting(cls: type) -> None:
    assert "propagate_configmaps" not in cls.with_plugins(()).model_fields


def test_the_rule_waits_only_for_what_every_watcher_lists() -> None:
    """The planner runs a rule once every resource it names is listed; ConfigMaps are listed
    only where the setting asks, so the rule must not name them, or nothing propagates where
    they are not watched (a Deployment among them)."""
    waited = {(r.group, r.resource) for r in PropagationRule("host").resources}
    assert ("apps", "deployments") in waited
    assert ("", "configmaps") not in waited
