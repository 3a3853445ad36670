"""Reading AdmissionReview requests and writing answers the API server accepts."""

from __future__ import annotations

import json

from spreadbus.engine import review
from spreadbus.engine.review import AdmissionRequest, Malformed
from tests.webhook.admission_reviews import patch_of, pod
from tests.webhook.admission_reviews import review as make_review


def test_a_pod_create_review_is_read_with_every_field_the_webhook_uses() -> None:
    body = make_review(operation="CREATE", resource="pods", obj=pod(generate_name="web-"))
    parsed = review.parse(json.dumps(body).encode())
    assert isinstance(parsed, AdmissionRequest)
    assert parsed.uid == body["request"]["uid"]
    assert (parsed.operation, parsed.group, parsed.resource, parsed.sub_resource) == (
        "CREATE",
        "",
        "pods",
        "",
    )
    assert parsed.object == body["request"]["object"]
    assert parsed.old_object is None
    assert parsed.dry_run is False


def test_an_eviction_is_read_with_its_sub_resource() -> None:
    body = make_review(
        operation="CREATE", resource="pods", sub_resource="eviction", name="web-1", obj={}
    )
    parsed = review.parse(json.dumps(body).encode())
    assert isinstance(parsed, AdmissionRequest)
    assert (parsed.sub_resource, parsed.name) == ("eviction", "web-1")


def test_a_review_without_uid_is_malformed_and_says_which_field() -> None:
    body = make_review(operation="CREATE", resource="pods", obj=pod("a"))
    del body["request"]["uid"]
    parsed = review.parse(json.dumps(body).encode())
    assert isinstance(parsed, Malformed)
    assert "request.uid" in parsed.reason


def test_a_malformed_review_keeps_its_uid_so_the_answer_can_be_matched() -> None:
    body = make_review(operation="CREATE", resource="pods", obj=pod("a"), uid="u-1")
    body["request"]["object"] = ["not", "an", "object"]
    parsed = review.parse(json.dumps(body).encode())
    assert isinstance(parsed, Malformed)
    assert parsed.uid == "u-1"
    assert "request.object" in parsed.reason


def test_other_review_versions_are_refused_by_name() -> None:
    body = make_review(operation="CREATE", resource="pods", obj=pod("a"))
    body["apiVersion"] = "admission.k8s.io/v1beta1"
    parsed = review.parse(json.dumps(body).encode())
    assert isinstance(parsed, Malformed)
    assert "admission.k8s.io/v1beta1" in parsed.reason
    assert parsed.api_version == "admission.k8s.io/v1beta1"


def test_deeply_nested_json_is_malformed_not_a_crash() -> None:
    parsed = review.parse(b"[" * 100_000 + b"]" * 100_000)
    assert isinstance(parsed, Malformed)


def test_json_pointer_escapes_slashes_and_tildes_in_annotation_keys() -> None:
    assert (
        review.pointer("metadata", "annotations", "apps.kruise.io/matched-workloadspread")
        == "/metadata/annotations/apps.kruise.io~1matched-workloadspread"
    )
    assert review.pointer("a~b", 0) == "/a~0b/0"


def test_an_allowing_answer_carries_a_base64_json_patch_only_when_there_is_one() -> None:
    ops = [{"op": "add", "path": "/metadata/labels/x", "value": "y"}]
    with_patch = review.allow("u", patch=ops)
    assert with_patch["response"]["allowed"] is True
    assert patch_of(with_patch) == ops
    plain = review.allow("u")
    assert "patch" not in plain["response"]
    assert "patchType" not in plain["response"]


def test_a_denial_carries_a_status_with_code_reason_and_field_causes() -> None:
    answer = review.deny(
        "u",
        "bad",
        code=422,
        reason="Invalid",
        causes=[{"field": "spec.subsets", "reason": "FieldRequired", "message": "m"}],
    )
    assert answer["apiVersion"] == "admission.k8s.io/v1"
    assert answer["kind"] == "AdmissionReview"
    response = answer["response"]
    assert response["uid"] == "u"
    assert response["allowed"] is False
    assert response["status"]["code"] == 422
    assert response["status"]["details"]["causes"][0]["field"] == "spec.subsets"
