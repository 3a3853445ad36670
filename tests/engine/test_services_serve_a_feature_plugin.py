"""A feature registered as a plugin is read by the services from the registry: the watcher observes
what it reads, the actuator may write what it declares, and the registry refuses plugins it cannot
use, naming them.

The webhook serving the plugin's handlers is shown by
``tests/webhook/test_a_plugin_features_handlers_are_served.py``; the planner, actuator and watcher
serving its rule end to end by ``tests/backbone/test_end_to_end_annotation.py``, whose Deployments
are annotated only by it."""

from __future__ import annotations

import pytest

from services.watcher.settings import WatcherSettings
from spreadbus.engine.feature import Feature
from spreadbus.engine.feature_set import plan_grants, watched_resources
from spreadbus.features.registry import BUILTIN, PluginError, features
from spreadbus.runtime.settings import load_settings
from tests.fixtures.generation_feature import PLUGIN


def test_without_plugins_the_webhook_serves_no_path_of_theirs() -> None:
    assert [f.name for f in features()] == [f.name for f in BUILTIN]
    assert "generation-stamp" not in [f.name for f in BUILTIN]


def test_the_watcher_observes_what_a_plugin_reads_and_the_actuator_may_write_its_targets() -> None:
    chosen = features([PLUGIN])
    assert [f.name for f in chosen] == [*(f.name for f in BUILTIN), "generation-stamp"]
    assert "apps/v1/deployments" in watched_resources(chosen)
    stamp = ("observed-generation", "patch", "apps", "deployments")
    assert stamp in [(g.rule, *g.target) for g in plan_grants(chosen)]
    assert stamp not in [(g.rule, *g.target) for g in plan_grants(BUILTIN)]
    settings = load_settings(WatcherSettings, env={"SPREADBUS_FEATURE_PLUGINS": PLUGIN})
    assert isinstance(settings, WatcherSettings)
    assert settings.resources == watched_resources(chosen)


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("tests.fixtures.generation_feature", "expected module:attribute"),
        ("tests.fixtures.no_such_module:FEATURE", "No module named"),
        ("tests.fixtures.generation_feature:NAME", "NAME is not a Feature"),
        ("spreadbus.features.workloadspread.feature:FEATURE", "'workloadspread' registered twice"),
    ],
)
def test_a_plugin_that_cannot_be_used_is_refused_naming_the_entry(entry: str, reason: str) -> None:
    with pytest.raises(PluginError, match=reason):
        features([entry])
    problems = load_settings(WatcherSettings, env={"SPREADBUS_FEATURE_PLUGINS": entry})
    assert isinstance(problems, list)
    assert "feature_plugins" in str(problems[0])
    assert reason.split()[0] in str(problems[0])


def test_every_builtin_feature_is_a_feature_with_a_unique_name() -> None:
    assert all(isinstance(f, Feature) for f in BUILTIN)
    assert len({f.name for f in BUILTIN}) == len(BUILTIN)
