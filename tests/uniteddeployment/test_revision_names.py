"""The UnitedDeployment's revision: the bytes Kruise records and the name Kubernetes' history gives.

The known names below were computed for the same templates with Go's own ``encoding/json`` (the
generic-map marshal Kruise's ``getUnitedDeploymentPatch`` ends with) and ``hash/fnv``, the steps of
``history.HashControllerRevision`` and ``rand.SafeEncodeString``; the smaller checks are worked by
hand from the algorithm.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.features.uniteddeployment.core.model import from_object
from spreadbus.features.uniteddeployment.core.revision import (
    fnv1_32,
    go_float,
    go_json,
    revision_data,
    revision_hash,
    revision_name,
    safe_encode,
    ud_revision_name,
)
from tests.uniteddeployment.builders import subset_json, ud_json

_SAMPLE = {
    "statefulSetTemplate": {
        "metadata": {"labels": {"app": "sample"}},
        "spec": {
            "selector": {"matchLabels": {"app": "sample"}},
            "template": {
                "metadata": {"labels": {"app": "sample"}},
                "spec": {"containers": [{"image": "nginx:alpine", "name": "nginx"}]},
            },
        },
    }
}
_TYPED_SHAPE = {
    "statefulSetTemplate": {
        "metadata": {"creationTimestamp": None, "labels": {"name": "foo"}},
        "spec": {
            "selector": None,
            "serviceName": "",
            "template": {
                "metadata": {"creationTimestamp": None, "labels": {"name": "foo"}},
                "spec": {
                    "containers": [{"image": "nginx:1.0", "name": "container-a", "resources": {}}]
                },
            },
            "updateStrategy": {},
        },
    }
}
_ESCAPES_AND_NUMBERS = {
    "deploymentTemplate": {
        "metadata": {"labels": {"app": "web", "tier": "<front&end>"}},
        "spec": {
            "minReadySeconds": 5,
            "progressDeadlineSeconds": 600,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {
                    "annotations": {
                        "note": 'line\nbreak\ttab "quoted" \\ back \u2028 sep é 雪',
                    },
                    "labels": {"app": "web"},
                },
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "image": "web:2",
                            "resources": {"limits": {"cpu": "2", "memory": "800Mi"}},
                            "args": ["--ratio", "0.5"],
                            "env": [{"name": "X", "value": "1"}],
                        }
                    ],
                    "terminationGracePeriodSeconds": 30,
                    "priority": 1.5e-7,
                    "huge": 1e21,
                    "big": 123456789012345678,
                },
            },
        },
    }
}
_CLONESET = {
    "cloneSetTemplate": {
        "metadata": {"labels": {"app": "c"}},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "c:1"}]}}},
    }
}


@pytest.mark.parametrize(
    ("prefix", "template", "collisions", "fnv", "name"),
    [
        pytest.param("sample-ud", _SAMPLE, 0, 3942347651, "sample-ud-7f8678cb95",
                     id="the-documented-sample"),
        pytest.param("sample-ud", _SAMPLE, 1, 3942347650, "sample-ud-7f8678cb94",
                     id="the-documented-sample-after-one-collision"),
        pytest.param("foo", _TYPED_SHAPE, 0, 3359886003, "foo-779fddb447",
                     id="a-template-in-the-typed-shape"),
        pytest.param("web", _ESCAPES_AND_NUMBERS, 0, 804330820, "web-d48774d64",
                     id="escapes-and-numbers"),
        pytest.param("empty", {}, None, 173142040, "empty-5c7586484",
                     id="no-template-no-collision-count"),
        pytest.param("cloned", _CLONESET, None, 1316924646, "cloned-575bf68b8b",
                     id="a-cloneset-template"),
    ],
)  # fmt: skip
def test_revision_names_match_gos_encoding_and_hash(
    prefix: str, template: dict[str, Any], collisions: int | None, fnv: int, name: str
) -> None:
    data = revision_data(template)
    probe = b"" if collisions is None else str(collisions).encode()

    assert fnv1_32(data + probe) == fnv
    assert revision_name(prefix, revision_hash(data, collisions)) == name


def test_the_documented_sample_is_recorded_as_these_bytes() -> None:
    assert revision_data(_SAMPLE) == (
        b'{"spec":{"template":{"$patch":"replace","statefulSetTemplate":{"metadata":{"labels":'
        b'{"app":"sample"}},"spec":{"selector":{"matchLabels":{"app":"sample"}},"template":'
        b'{"metadata":{"labels":{"app":"sample"}},"spec":{"containers":[{"image":"nginx:alpine",'
        b'"name":"nginx"}]}}}}}}}'
    )


def test_escapes_and_numbers_are_written_as_go_writes_them() -> None:
    data = revision_data(_ESCAPES_AND_NUMBERS).decode()

    assert '"tier":"\\u003cfront\\u0026end\\u003e"' in data
    assert '"note":"line\\nbreak\\ttab \\"quoted\\" \\\\ back \\u2028 sep é 雪"' in data
    assert '"big":123456789012345680' in data
    assert '"huge":1e+21,"priority":1.5e-7,"terminationGracePeriodSeconds":30' in data


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(b"", 0x811C9DC5, id="empty-is-the-offset-basis"),
        pytest.param(b"a", 0x050C5D7E, id="a"),
        pytest.param(b"foobar", 0x31F0B262, id="foobar"),
    ],
)
def test_fnv1_matches_the_published_fnv1_vectors(data: bytes, expected: int) -> None:
    assert fnv1_32(data) == expected


def test_the_hash_of_the_empty_template_worked_by_hand() -> None:
    # FNV-1 of '{"spec":{"template":{"$patch":"replace"}}}' is 173142040; its digits map through
    # the alphabet by code point modulo 27: '0' (48) -> index 21 '4', '1' -> '5', ... '9' -> 'f'.
    data = b'{"spec":{"template":{"$patch":"replace"}}}'

    assert revision_data({}) == data
    assert fnv1_32(data) == 173142040
    assert safe_encode("0123456789") == "456789bcdf"
    assert revision_hash(data, None) == "5c7586484"


def test_a_collision_count_is_hashed_as_its_decimal_digits() -> None:
    data = revision_data(_SAMPLE)

    assert revision_hash(data, 12) == safe_encode(str(fnv1_32(data + b"12")))
    assert revision_hash(data, 0) != revision_hash(data, None)


def test_the_ud_hashes_with_its_collision_count_or_zero() -> None:
    obj = ud_json([subset_json("a")], replicas=2)
    obj["spec"]["template"] = _SAMPLE

    assert ud_revision_name(from_object(obj)) == "sample-ud-7f8678cb95"
    obj["status"] = {"collisionCount": 1}
    assert ud_revision_name(from_object(obj)) == "sample-ud-7f8678cb94"


def test_only_the_template_makes_a_revision() -> None:
    before = ud_json([subset_json("a")], replicas=2)
    scaled = ud_json([subset_json("a", replicas=1), subset_json("b")], replicas=7)
    retagged = ud_json([subset_json("a")], replicas=2)
    retagged["spec"]["template"]["deploymentTemplate"]["spec"]["template"]["spec"]["containers"][0][
        "image"
    ] = "nginx:1.27"

    assert ud_revision_name(from_object(before)) == ud_revision_name(from_object(scaled))
    assert ud_revision_name(from_object(before)) != ud_revision_name(from_object(retagged))


def test_a_template_patch_directive_is_overwritten_by_replace() -> None:
    assert revision_data({"$patch": "delete"}) == revision_data({})


def test_a_long_name_is_cut_to_223_bytes_before_the_hash() -> None:
    assert revision_name("u" * 300, "abc") == "u" * 223 + "-abc"
    assert revision_name("u" * 223, "abc") == "u" * 223 + "-abc"


@pytest.mark.parametrize(
    ("number", "text"),
    [
        pytest.param(0.0, "0", id="zero"),
        pytest.param(-0.0, "-0", id="negative-zero"),
        pytest.param(30, "30", id="an-integer"),
        pytest.param(2.5, "2.5", id="a-fraction"),
        pytest.param(1e20, "100000000000000000000", id="below-1e21-stays-fixed"),
        pytest.param(1e21, "1e+21", id="from-1e21-exponent"),
        pytest.param(0.000001, "0.000001", id="1e-6-stays-fixed"),
        pytest.param(1e-7, "1e-7", id="below-1e-6-exponent-without-leading-zero"),
        pytest.param(1.5e-10, "1.5e-10", id="two-digit-negative-exponent"),
        pytest.param(-2.5e300, "-2.5e+300", id="large-negative"),
        pytest.param(2**53 + 1, "9007199254740992", id="an-integer-beyond-float-precision"),
    ],
)
def test_numbers_print_as_float64_the_way_encoding_json_does(number: float, text: str) -> None:
    assert go_float(float(number)) == text


def test_control_characters_use_the_short_escapes_of_current_go() -> None:
    # Go 1.22 and later (Kruise v1.9.0 builds with 1.23) write \b and \f; others are \u00XX.
    assert go_json("\b\f\x01\x1f\x7f") == '"\\b\\f\\u0001\\u001f\x7f"'


def test_keys_sort_by_their_utf8_bytes_at_every_depth() -> None:
    assert go_json({"b": {"z": 1, "Z": 2}, "a": [{"y": 1, "x": 2}], "é": 0, "~": 0}) == (
        '{"a":[{"x":2,"y":1}],"b":{"Z":2,"z":1},"~":0,"é":0}'
    )


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=10,
)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(max_size=6), _JSON, max_size=5))
def test_the_data_decodes_back_to_the_patch_whatever_the_key_order(
    template: dict[str, Any],
) -> None:
    data = revision_data(template)
    reordered = dict(reversed(list(template.items())))

    assert json.loads(data) == {"spec": {"template": {**template, "$patch": "replace"}}}
    assert revision_data(reordered) == data
