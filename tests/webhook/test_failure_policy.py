"""A policy that fails is answered by the documented failure policy, per path."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp

from services.webhook.server import Metrics, answer_body, answer_limit, build_routes
from spreadbus.engine.admission_chain import AdmissionHandler, Verdict
from spreadbus.engine.review import AdmissionRequest
from spreadbus.features.workloadspread.admission.conversion import convert
from tests.webhook.admission_reviews import pod, review
from tests.webhook.plain_review_server import serving


async def broken(request: AdmissionRequest) -> dict[str, Any]:
    raise RuntimeError("projection exploded")


async def answers_someone_else(request: AdmissionRequest) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "another", "allowed": True},
    }


def body(uid: str) -> bytes:
    return json.dumps(review(operation="CREATE", resource="pods", obj=pod("p"), uid=uid)).encode()


async def test_a_pod_path_that_fails_admits_unchanged_with_a_warning() -> None:
    metrics = Metrics()
    result, status = await answer_body("/mutate-pod", body("u1"), broken, True, metrics)
    assert status == 200
    response = result["response"]
    assert (response["uid"], response["allowed"]) == ("u1", True)
    assert "patch" not in response
    assert "RuntimeError" in response["warnings"][0]
    assert metrics.failures.labels("/mutate-pod", "exception")._value.get() == 1


async def test_workloadspread_validation_that_fails_denies_with_an_internal_error() -> None:
    result, status = await answer_body(
        "/validate-workloadspread", body("u2"), broken, False, Metrics()
    )
    assert status == 200
    response = result["response"]
    assert (response["uid"], response["allowed"]) == ("u2", False)
    assert response["status"]["code"] == 500
    assert "projection exploded" in response["status"]["message"]


async def test_an_answer_for_another_request_is_treated_as_a_failure() -> None:
    result, _ = await answer_body("/mutate-pod", body("u3"), answers_someone_else, True, Metrics())
    assert result["response"]["uid"] == "u3"
    assert result["response"]["warnings"]


async def never_decides(request: AdmissionRequest) -> Verdict:
    """A decision that waits on a bus that never answers."""
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


def Stuck() -> list[AdmissionHandler]:
    """Handlers whose every decision waits forever, on the pod paths (fail open)."""
    return [AdmissionHandler(feature="stuck", path=path, decide=never_decides)
            for path in ("/mutate-pod", "/validate-pod")]


async def test_a_decision_that_takes_too_long_is_admitted_unchanged_in_time() -> None:
    routes = build_routes(Stuck(), metrics=Metrics(), answer_timeout=0.05)
    async with serving(routes) as (url, _), aiohttp.ClientSession() as http:
        response = await http.post(f"{url}/mutate-pod", data=body("slow"))
        answer = await response.json()
    assert answer["response"]["uid"] == "slow"
    assert answer["response"]["allowed"] is True
    assert "TimeoutError" in answer["response"]["warnings"][0]


async def test_a_shorter_deadline_sent_by_the_api_server_bounds_the_decision() -> None:
    """Configured to wait 30 s, the webhook answers a call sent with ``?timeout=1s`` (a
    configuration's timeoutSeconds: 1) by its failure policy while the API server still waits."""
    routes = build_routes(Stuck(), metrics=Metrics(), answer_timeout=30)
    async with serving(routes) as (url, _), aiohttp.ClientSession() as http, asyncio.timeout(10):
        response = await http.post(f"{url}/mutate-pod?timeout=1s", data=body("short"))
        answer = await response.json()
    assert answer["response"]["uid"] == "short"
    assert answer["response"]["allowed"] is True
    assert "TimeoutError" in answer["response"]["warnings"][0]


def test_the_answer_limit_keeps_a_margin_inside_the_api_servers_deadline() -> None:
    assert answer_limit(None, 2.5) == 2.5
    assert answer_limit("10s", 2.5) == 2.5  # the configured limit is the shorter
    assert answer_limit("3s", 30) == 2.5  # half a second for the answer to travel
    assert answer_limit("1s", 30) == 0.5
    assert answer_limit("600ms", 30) == 0.3  # never less than half the deadline
    assert answer_limit("soon", 2.5) == 2.5  # not a duration: the configured limit
    assert answer_limit("0", 2.5) == 2.5


def test_a_body_over_the_limit_is_refused_with_an_answer_of_its_own_kind() -> None:
    metrics = Metrics()
    routes = build_routes(Stuck(), conversions={"/convert": convert}, metrics=metrics)
    status, answer = routes["/mutate-pod"].too_large()
    response = json.loads(answer)["response"]
    assert (status, response["allowed"], response["status"]["code"]) == (413, False, 413)
    assert "too large" in response["status"]["message"]
    assert metrics.failures.labels("/mutate-pod", "malformed")._value.get() == 1
    status, answer = routes["/convert"].too_large()
    conversion = json.loads(answer)
    assert (status, conversion["kind"]) == (413, "ConversionReview")
    assert conversion["response"]["result"] == {
        "status": "Failure", "message": "request body too large"}
