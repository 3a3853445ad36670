"""Settings: flags, then SPREADBUS_* variables, then defaults; every bad one is reported."""

from __future__ import annotations

import argparse

from spreadbus.runtime.settings import (
    ServiceSettings,
    SettingError,
    add_settings_arguments,
    load_settings,
)


class PlannerLike(ServiceSettings, frozen=True, kw_only=True):
    snapshot_every: int = 50_000
    dry_run: bool = False


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_settings_arguments(parser, PlannerLike)
    return parser.parse_args(argv)


def test_a_flag_beats_the_environment_which_beats_the_default() -> None:
    env = {"SPREADBUS_HTTP_PORT": "9000", "SPREADBUS_CLUSTER": "east"}
    loaded = load_settings(PlannerLike, parse(["--cluster", "west"]), env)
    assert isinstance(loaded, PlannerLike)
    assert loaded.cluster == "west"
    assert loaded.http_port == 9000
    assert loaded.snapshot_every == 50_000


def test_a_comma_separated_variable_becomes_the_nats_url_list() -> None:
    env = {"SPREADBUS_NATS_URL": "nats://a:4222, nats://b:4222"}
    loaded = load_settings(PlannerLike, parse([]), env)
    assert isinstance(loaded, PlannerLike)
    assert loaded.nats_url == ("nats://a:4222", "nats://b:4222")


def test_booleans_read_the_usual_words() -> None:
    loaded = load_settings(PlannerLike, parse(["--dry-run", "yes"]), {})
    assert isinstance(loaded, PlannerLike)
    assert loaded.dry_run is True


def test_every_bad_setting_is_reported_with_where_it_came_from() -> None:
    env = {"SPREADBUS_HTTP_PORT": "eighty"}
    loaded = load_settings(PlannerLike, parse(["--snapshot-every", "often"]), env)
    assert isinstance(loaded, list)
    assert {(e.field, e.source) for e in loaded} == {
        ("http_port", "SPREADBUS_HTTP_PORT"),
        ("snapshot_every", "--snapshot-every"),
    }
    assert all(isinstance(e, SettingError) and "int" in e.message for e in loaded)
