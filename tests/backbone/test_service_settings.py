"""Settings: flags, then SPREADBUS_* variables, then defaults; every bad one is reported."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from spreadbus.runtime.settings import (
    CommaList,
    ServiceSettings,
    SettingError,
    add_settings_arguments,
    load_settings,
)


class PlannerLike(ServiceSettings):
    snapshot_every: int = 50_000
    """Messages between snapshots."""
    dry_run: bool = False
    """Decide without publishing."""
    zones: CommaList = ("a",)
    """Zones to spread over."""


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_settings_arguments(parser, PlannerLike, argv=argv, env={})
    return parser.parse_args(argv)


def test_a_flag_beats_the_environment_which_beats_the_default() -> None:
    env = {"SPREADBUS_HTTP_PORT": "9000", "SPREADBUS_CLUSTER": "east"}
    loaded = load_settings(PlannerLike, parse(["--cluster", "west"]), env)
    assert isinstance(loaded, PlannerLike)
    assert loaded.cluster == "west"
    assert loaded.http_port == 9000
    assert loaded.snapshot_every == 50_000


@given(
    flag=st.one_of(st.none(), st.integers(1, 65535)),
    variable=st.one_of(st.none(), st.integers(1, 65535)),
)
def test_each_setting_takes_the_flag_else_the_variable_else_its_default(
    flag: int | None, variable: int | None
) -> None:
    argv = [] if flag is None else ["--http-port", str(flag)]
    env = {} if variable is None else {"SPREADBUS_HTTP_PORT": str(variable)}
    loaded = load_settings(PlannerLike, parse(argv), env)
    assert isinstance(loaded, PlannerLike)
    expected = flag if flag is not None else variable if variable is not None else 8080
    assert loaded.http_port == expected


def test_a_comma_separated_variable_becomes_the_nats_url_list() -> None:
    env = {"SPREADBUS_NATS_URL": "nats://a:4222, nats://b:4222"}
    loaded = load_settings(PlannerLike, parse([]), env)
    assert isinstance(loaded, PlannerLike)
    assert loaded.nats_url == ("nats://a:4222", "nats://b:4222")


part = st.text(st.characters(blacklist_characters=",", blacklist_categories=("Cs",)),
               min_size=1).filter(lambda s: s.strip() != "")


@given(parts=st.lists(part, max_size=5), spaces=st.sampled_from(["", " ", "  "]))
def test_a_list_flag_is_its_comma_separated_parts_trimmed_empty_ones_dropped(
    parts: list[str], spaces: str
) -> None:
    text = ("," + spaces).join([*parts, ""])
    loaded = load_settings(PlannerLike, parse([f"--zones={text}"]), {})
    assert isinstance(loaded, PlannerLike)
    assert loaded.zones == tuple(p.strip() for p in parts)


def test_a_list_given_in_python_is_taken_as_it_is() -> None:
    assert PlannerLike(zones=("x,y",)).zones == ("x,y",)


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


def test_a_bad_setting_reads_as_its_name_its_source_and_pydantics_message() -> None:
    loaded = load_settings(PlannerLike, parse(["--dry-run", "perhaps"]), {})
    assert isinstance(loaded, list)
    assert [str(e) for e in loaded] == [
        "dry_run (from --dry-run): Input should be a valid boolean, unable to interpret input"
    ]


def test_a_variable_named_in_lower_case_is_read_and_named_as_written() -> None:
    loaded = load_settings(PlannerLike, parse([]), {"spreadbus_http_port": "x"})
    assert isinstance(loaded, list)
    assert [(e.field, e.source) for e in loaded] == [("http_port", "spreadbus_http_port")]


def test_variables_of_no_setting_are_ignored_and_unknown_fields_refused() -> None:
    loaded = load_settings(PlannerLike, parse([]), {"SPREADBUS_NO_SUCH_THING": "1"})
    assert isinstance(loaded, PlannerLike)
    with pytest.raises(ValidationError, match="no_such_thing"):
        PlannerLike(no_such_thing=1)  # type: ignore[call-arg]


def test_settings_are_frozen() -> None:
    loaded = PlannerLike()
    with pytest.raises(ValidationError, match="frozen"):
        loaded.cluster = "elsewhere"  # type: ignore[misc]


def test_the_help_of_a_flag_gives_its_variable_default_and_docstring() -> None:
    parser = argparse.ArgumentParser()
    add_settings_arguments(parser, PlannerLike, argv=[], env={})
    text = " ".join(parser.format_help().split())
    assert "--snapshot-every SNAPSHOT_EVERY Messages between snapshots. " \
           "(env SPREADBUS_SNAPSHOT_EVERY; default 50000)" in text
    assert "--zones ZONES Comma-separated. Zones to spread over. " \
           "(env SPREADBUS_ZONES; default 'a')" in text
    assert "(env SPREADBUS_NATS_URL; default 'nats://127.0.0.1:4222')" in text
