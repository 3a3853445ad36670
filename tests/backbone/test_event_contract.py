"""The bus contract: round trips, evolution (unknown type, v+1, upcasting) and subject escapes."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from events import codec, subjects
from events.codec import Codec, Undecodable
from events.messages import (
    Admission,
    ApiError,
    ObjectRef,
    Observation,
    Outcome,
    Plan,
    SyncMarker,
)
from events.schema import json_schema
from events.streams import TOMBSTONE_TTL_SECONDS, observation_headers

TARGET = ObjectRef(group="apps", version="v1", resource="deployments", namespace="ns", name="web")

EXAMPLES = [
    Observation(
        cluster="east", group="", version="v1", resource="pods", event="ADDED",
        object={"metadata": {"name": "p", "namespace": "ns"}}, ts=12.5,
    ),
    SyncMarker(cluster="east", group="apps", version="v1", resource="deployments",
               complete=True, resource_version="42", count=3),
    Plan(id="abc", cluster="east", verb="patch", target=TARGET,
         patch={"metadata": {"annotations": {"a": "1"}}}, rule="r", causes=[7]),
    Outcome(plan_id="abc", cluster="east", verb="patch", target=TARGET, result="failed",
            error=ApiError(status=422, reason="Invalid", message="nope")),
    Admission(cluster="east", namespace="ns", request_uid="u", workload="WorkloadSpread/ws",
              subset="zone-a"),
]


@pytest.mark.parametrize("event", EXAMPLES, ids=lambda e: type(e).__name__)
def test_every_message_type_survives_a_round_trip(event: Any) -> None:
    assert codec.decode(codec.encode(event)) == event


def test_an_unknown_type_is_reported_not_raised() -> None:
    result = codec.decode(b'{"type": "telemetry", "v": 1, "x": 1}')
    assert result == Undecodable(kind="unknown_type", type="telemetry", v=1)


def test_a_newer_version_with_extra_fields_decodes_as_the_current_one() -> None:
    body = json.loads(codec.encode(EXAMPLES[0]))
    body["v"] = 2
    body["priority"] = "high"
    body["object"]["extra"] = {"kept": True}
    result = codec.decode(json.dumps(body).encode())
    assert isinstance(result, Observation)
    assert result.v == 2
    assert result.object["extra"] == {"kept": True}


def test_an_invalid_message_names_the_bad_field() -> None:
    result = codec.decode(b'{"type": "sync", "cluster": "c", "group": "", "version": "v1",'
                          b' "resource": "pods", "complete": "maybe"}')
    assert isinstance(result, Undecodable)
    assert result.kind == "invalid"
    assert "$.complete" in result.error


def test_an_old_version_is_upcast_step_by_step() -> None:
    # A world where sync markers are at v3: v1 called the flag "done", v2 had no count.
    def v1_to_v2(body: dict[str, Any]) -> dict[str, Any]:
        body["complete"] = body.pop("done")
        return body

    def v2_to_v3(body: dict[str, Any]) -> dict[str, Any]:
        body.setdefault("count", -1)
        return body

    upcasting = Codec(
        versions={"sync": 3}, upcasters={("sync", 1): v1_to_v2, ("sync", 2): v2_to_v3}
    )
    old = (
        b'{"type":"sync","v":1,"cluster":"c","group":"","version":"v1",'
        b'"resource":"pods","done":true}'
    )
    result = upcasting.decode(old)
    assert isinstance(result, SyncMarker)
    assert (result.v, result.complete, result.count) == (3, True, -1)


def test_an_old_version_without_an_upcaster_is_reported() -> None:
    strict = Codec(versions={"sync": 2})
    old = codec.encode(EXAMPLES[1])
    result = strict.decode(old)
    assert isinstance(result, Undecodable)
    assert "no upcaster" in result.error


@given(st.text())
def test_escaping_is_reversible_and_yields_one_valid_token(value: str) -> None:
    token = subjects.escape(value)
    assert token
    assert all(c.isascii() and (c.isalnum() or c in "-%_") for c in token)
    assert not set(token) & set(".*> ")
    assert subjects.unescape(token) == value


@given(st.lists(st.text(), min_size=5, max_size=5))
def test_observation_subjects_parse_back_to_their_parts(parts: list[str]) -> None:
    subject = subjects.observation(*parts)
    assert subjects.parse_observation(subject) == tuple(parts)


def test_plain_kubernetes_names_stay_readable() -> None:
    assert subjects.observation("east", "", "pods", "default", "web-1") == (
        "kube.obs.east._.pods.default.web-1"
    )
    assert subjects.observation("east", "apps", "deployments", "", "a.b") == (
        "kube.obs.east.apps.deployments._.a%2Eb"
    )


def test_the_json_schema_covers_every_message_type() -> None:
    schema = json_schema()
    text = json.dumps(schema)
    for name in ("Observation", "SyncMarker", "Plan", "Outcome", "Admission"):
        assert f'"{name}"' in text
    msgspec.json.decode(text.encode())  # valid JSON


@pytest.mark.parametrize("token", ["", "a.b", "a%2", "a%2e", "%ZZ", "%+1", "%C3", "é"])
def test_tokens_escape_never_makes_are_rejected(token: str) -> None:
    with pytest.raises(subjects.SubjectError):
        subjects.unescape(token)


@pytest.mark.parametrize("event", ["ADDED", "MODIFIED"])
def test_an_observation_is_published_with_its_dedup_id_and_no_ttl(event: str) -> None:
    assert observation_headers("u-1", "42", event) == {"Nats-Msg-Id": f"u-1:42:{event}"}


def test_a_deletion_is_published_with_a_ttl_in_whole_seconds() -> None:
    assert observation_headers("u-1", "43", "DELETED") == {
        "Nats-Msg-Id": "u-1:43:DELETED",
        "Nats-TTL": str(TOMBSTONE_TTL_SECONDS),
    }
    short = observation_headers("u-1", "43", "DELETED", tombstone_ttl_seconds=1.2)
    assert short["Nats-TTL"] == "2"  # rounded up: a tombstone never expires early
    with pytest.raises(ValueError, match="at least 1 s"):
        observation_headers("u-1", "43", "DELETED", tombstone_ttl_seconds=0.5)
