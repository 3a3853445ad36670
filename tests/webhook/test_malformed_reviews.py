"""Whatever arrives on a review path, the answer is a well-formed AdmissionReview."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from services.webhook.server import Metrics, answer_body
from spreadbus.engine.review import AdmissionRequest
from tests.webhook.admission_reviews import pod, review

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)

REQUEST_KEYS = [
    "uid",
    "operation",
    "resource",
    "subResource",
    "namespace",
    "name",
    "object",
    "oldObject",
    "dryRun",
    "options",
    "userInfo",
]


@st.composite
def damaged_reviews(draw: st.DrawFn) -> bytes:
    """A real review with some fields replaced by arbitrary JSON, or raw junk bytes."""
    if draw(st.booleans()):
        return draw(st.binary(max_size=64))
    body: dict[str, Any] = review(operation="CREATE", resource="pods", obj=pod("p"))
    for key in draw(st.lists(st.sampled_from(REQUEST_KEYS), max_size=4)):
        body["request"][key] = draw(json_values)
    if draw(st.booleans()):
        body[draw(st.sampled_from(["apiVersion", "kind", "request"]))] = draw(json_values)
    return json.dumps(body).encode()


async def echo_policy(request: AdmissionRequest) -> dict[str, Any]:
    return {
        "apiVersion": request.api_version,
        "kind": "AdmissionReview",
        "response": {"uid": request.uid, "allowed": True},
    }


def answer(body: bytes, fail_open: bool) -> tuple[dict[str, Any], int]:
    return asyncio.run(answer_body("/mutate-pod", body, echo_policy, fail_open, Metrics()))


@settings(max_examples=300, deadline=None)
@given(body=damaged_reviews(), fail_open=st.booleans())
def test_every_body_gets_an_admission_review_answer(body: bytes, fail_open: bool) -> None:
    result, status = answer(body, fail_open)
    assert result["kind"] == "AdmissionReview"
    assert isinstance(result["apiVersion"], str)
    response = result["response"]
    assert isinstance(response["allowed"], bool)
    assert isinstance(response["uid"], str)
    json.dumps(result)  # serialisable as sent
    if status == 400:
        assert response["allowed"] is False
        assert response["status"]["message"].startswith("malformed AdmissionReview")
    else:
        assert status == 200


@settings(max_examples=100, deadline=None)
@given(uid=st.text(min_size=1, max_size=40), field=st.sampled_from(["object", "oldObject"]))
def test_a_damaged_review_with_a_uid_is_answered_for_that_uid(uid: str, field: str) -> None:
    body = review(operation="CREATE", resource="pods", obj=pod("p"), uid=uid)
    body["request"][field] = "not an object"
    result, status = answer(json.dumps(body).encode(), True)
    assert status == 400
    assert result["response"]["uid"] == uid
    assert field in result["response"]["status"]["message"]
