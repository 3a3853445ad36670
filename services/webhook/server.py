"""The admission paths: the registered features' handlers, every review answered.

Each path (the webhook configurations in ``deploy/webhook/`` point at them) runs the handlers
the features registered on it, in registry order, combined by
:func:`spreadbus.engine.admission_chain.run_chain`; conversion paths answer ConversionReviews. All
are served over HTTPS by :class:`services.webhook.review_protocol.ReviewServer`. With WorkloadSpread
registered:

- ``POST /mutate-pod``: pod CREATE; steers the pod into a subset with a JSON Patch.
- ``POST /validate-pod``: pod DELETE (records the freed slot) and ``pods/eviction`` CREATE
  (allowed, recorded nowhere: a disruption budget may still refuse it).
- ``POST /validate-workloadspread``: WorkloadSpread CREATE and UPDATE.
- ``POST /convert``: CRD conversion of WorkloadSpreads between ``v1alpha1`` and ``v1beta1``.

With UnitedDeployment registered: ``POST /mutate-uniteddeployment`` (its defaults, as a JSON
Patch) and ``POST /validate-uniteddeployment`` (CREATE, UPDATE and a protected DELETE), both
failing closed.

``/healthz``, ``/readyz`` and ``/metrics`` (with the latency histogram) are served on the plain
HTTP health port by :class:`spreadbus.runtime.health.HealthServer`, from the same registry.

Failure policy, chosen per path from its handlers' ``failure_policy`` to match the
configuration's ``failurePolicy`` (one handler that fails closed makes its path fail closed):

- an exception on a fail-open path (the pod reviews) allows the request unchanged, with a
  warning, as the API server would with ``failurePolicy: Ignore`` after a timeout, but at once;
- an exception on a fail-closed path (validating a WorkloadSpread) denies it with a 500, so an
  unchecked spread is never stored;
- a body that is not a usable AdmissionReview gets an AdmissionReview answer that denies it,
  with HTTP 400 and the reason (the API server then applies its own failure policy).

Nothing on these paths calls the Kubernetes API: answers come from the service's projection of
the bus, and the only remote call is the slot reservation on NATS.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

import msgspec
from prometheus_client import CollectorRegistry, Counter, Histogram

from kubesemantics import go_duration
from services.webhook.review_protocol import Answer, Route
from spreadbus.engine import conversion_review, review
from spreadbus.engine.admission_chain import AdmissionHandler, Verdict, fails_open, paths, run_chain
from spreadbus.engine.conversion_review import Convert
from spreadbus.engine.review import AdmissionRequest

log = logging.getLogger(__name__)

MAX_BODY: Final = 3 * 1024 * 1024  # the API server's own request limit for objects
_ENCODER: Final = msgspec.json.Encoder()
LATENCY_BUCKETS: Final = (
    0.0005,
    0.001,
    0.002,
    0.003,
    0.005,
    0.0075,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    3.0,
)


Handler = Callable[[AdmissionRequest], Awaitable[dict[str, Any]]]


class Metrics:
    """The webhook's Prometheus metrics, in their own registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.latency = Histogram(
            "spreadbus_webhook_admission_duration_seconds",
            "Time to answer one AdmissionReview, by path and answer.",
            ["path", "answer"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.failures = Counter(
            "spreadbus_webhook_failures",
            "Reviews answered by the failure policy, by path and cause.",
            ["path", "cause"],
            registry=self.registry,
        )


def build_routes(
    handlers: Sequence[AdmissionHandler],
    *,
    conversions: Mapping[str, Convert] | None = None,
    metrics: Metrics | None = None,
    answer_timeout: float = 2.5,
) -> dict[str, Route]:
    """The review paths and conversion, for :class:`~services.webhook.review_protocol.ReviewServer`.

    ``answer_timeout`` bounds one decision (a slow or unreachable NATS included) below the
    configurations' ``timeoutSeconds``, so the failure policy is applied here, with a reason,
    before the API server gives up on the call; a call that names a shorter deadline
    (``?timeout=``) is bounded by that one (:func:`answer_limit`).
    """
    metrics = metrics or Metrics()
    routes = {
        path: _review_route(path, _chain(on_path), fails_open(on_path), metrics, answer_timeout)
        for path, on_path in paths(handlers).items()
    }
    for path, convert in (conversions or {}).items():
        if path in routes:
            raise ValueError(f"path {path} registered twice")
        routes[path] = _conversion_route(path, convert, metrics)
    return routes


def _chain(handlers: Sequence[AdmissionHandler]) -> Handler:
    """One path's handlers as one review handler answering a complete AdmissionReview."""

    async def answer(request: AdmissionRequest) -> dict[str, Any]:
        return review_answer(request, await run_chain(handlers, request))

    return answer


def review_answer(request: AdmissionRequest, verdict: Verdict) -> dict[str, Any]:
    if verdict.allowed:
        return review.allow(request.uid, api_version=request.api_version, patch=verdict.patch,
                            warnings=verdict.warnings)
    return review.deny(request.uid, verdict.message, code=verdict.code, reason=verdict.reason,
                       api_version=request.api_version, causes=verdict.causes)


ANSWER_MARGIN_SECONDS: Final = 0.5
"""Left of the API server's own deadline for the answer to reach it."""


def answer_limit(api_timeout: str | None, configured: float) -> float:
    """How long one decision may take: ``configured``, shortened to fit inside the deadline the
    API server sent with the call (``?timeout=3s``) with a margin, so that a configuration with a
    shorter ``timeoutSeconds`` still gets this webhook's failure policy and its reason rather
    than the API server's timeout."""
    deadline = go_duration.seconds(api_timeout) if api_timeout else None
    if deadline is None or deadline <= 0:
        return configured
    return min(configured, max(deadline - ANSWER_MARGIN_SECONDS, deadline / 2))


def _bounded(handler: Handler, timeout: float) -> Handler:
    async def bounded(request: AdmissionRequest) -> dict[str, Any]:
        # a deadline on the request's own task: no second task per review, as wait_for makes
        try:
            async with asyncio.timeout(timeout):
                return await handler(request)
        except TimeoutError:
            raise TimeoutError(f"no decision within {timeout}s") from None

    return bounded


def _query_value(query: str, name: str) -> str | None:
    """The first ``name=value`` of a query string, as sent (the API server sends ``timeout=``
    alone, nothing that needs unescaping)."""
    for pair in query.split("&"):
        key, _, value = pair.partition("=")
        if key == name:
            return value
    return None


def _review_route(
    path: str, handler: Handler, fail_open: bool, metrics: Metrics, answer_timeout: float
) -> Route:
    allowed_latency = metrics.latency.labels(path, "allowed")
    denied_latency = metrics.latency.labels(path, "denied")

    async def answer(body: bytes, query: str) -> Answer:
        started = time.perf_counter()
        limit = answer_limit(_query_value(query, "timeout"), answer_timeout)
        result, status = await answer_body(path, body, _bounded(handler, limit), fail_open,
                                           metrics)
        latency = allowed_latency if result["response"]["allowed"] else denied_latency
        latency.observe(time.perf_counter() - started)
        return status, _ENCODER.encode(result)

    def too_large() -> Answer:
        metrics.failures.labels(path, "malformed").inc()
        return 413, _ENCODER.encode(review.deny("", "request body too large", code=413))

    return Route(answer, too_large)


def _conversion_route(path: str, convert: Convert, metrics: Metrics) -> Route:
    converted_latency = metrics.latency.labels(path, "allowed")
    refused_latency = metrics.latency.labels(path, "denied")

    async def answer(body: bytes, query: str) -> Answer:
        started = time.perf_counter()
        try:
            review_body: object = msgspec.json.decode(body)
        except (msgspec.DecodeError, RecursionError):
            review_body = None
        result = conversion_review.answer(review_body, convert)
        ok = result["response"]["result"]["status"] == "Success"
        (converted_latency if ok else refused_latency).observe(time.perf_counter() - started)
        return 200, _ENCODER.encode(result)

    def too_large() -> Answer:
        return 413, _ENCODER.encode(conversion_review.failed("request body too large"))

    return Route(answer, too_large)


async def answer_body(
    path: str, body: bytes, handler: Handler, fail_open: bool, metrics: Metrics
) -> tuple[dict[str, Any], int]:
    """Parse, decide and apply the failure policy: always an AdmissionReview, never a raise."""
    request = review.parse(body)
    if isinstance(request, review.Malformed):
        metrics.failures.labels(path, "malformed").inc()
        message = f"malformed AdmissionReview: {request.reason}"
        return review.deny(request.uid, message, api_version=request.api_version), 400
    try:
        answer = await handler(request)
        _check_answer(answer, request.uid)
    except Exception as exc:
        metrics.failures.labels(path, "exception").inc()
        log.exception("admission failed on %s for %s", path, request.uid)
        if fail_open:
            warning = f"spreadbus webhook error, admitted unchanged: {type(exc).__name__}"
            return review.allow(
                request.uid, api_version=request.api_version, warnings=[warning]
            ), 200
        message = f"spreadbus webhook internal error: {type(exc).__name__}: {exc}"
        denial = review.deny(
            request.uid,
            message,
            code=500,
            reason="InternalError",
            api_version=request.api_version,
        )
        return denial, 200
    return answer, 200


def _check_answer(answer: dict[str, Any], uid: str) -> None:
    response = answer.get("response")
    if not isinstance(response, dict) or response.get("uid") != uid:
        raise ValueError("policy answered another request")
    if not isinstance(response.get("allowed"), bool):
        raise ValueError("policy answer has no allowed flag")
