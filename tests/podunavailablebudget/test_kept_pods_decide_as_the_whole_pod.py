"""A pod as a webhook replica keeps it for budgets is decided on as the whole pod.

The budget view keeps only what an eviction reads of a pod (:func:`kept`). Over random pods,
built from the seed's shapes with every field a decision looks at varied (phase, deletion,
conditions, labels, annotations, containers and their statuses, in-place and SidecarSet state)
and over pods with values of any type, the kept pod reads as the whole one: its availability,
budget link and namespace, and the decision on its eviction and its DELETE.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.features.podunavailablebudget.admission import decisions
from spreadbus.features.podunavailablebudget.admission.kept_pod import kept
from spreadbus.features.podunavailablebudget.core import pod_health
from spreadbus.features.podunavailablebudget.core.admission import related_pub
from spreadbus.features.podunavailablebudget.core.workloads import namespace_of
from tests.podunavailablebudget.builders import budget, pod
from tests.podunavailablebudget.test_pod_consistency import CASES, sidecar_pod

NOW = datetime(2026, 1, 1, tzinfo=UTC)
DIGEST = "sha256:" + "a" * 64
IMAGES = ("nginx:1", "nginx:2", "nginx", f"reg/app@{DIGEST}", f"reg/app:v1@{DIGEST}")
IDS = ("id1", "id2", f"docker-pullable://reg/app@{DIGEST}", f"reg/app@sha256:{'b' * 64}")
NAMES = ("main", "side")

odd = st.one_of(st.none(), st.booleans(), st.integers(-1, 1), st.just(""), st.just([]),
                st.just({}), st.sampled_from(("Running", "True", "main", "web")))


def or_odd(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``strategy``, or once in six a value of any type."""
    return st.integers(0, 5).flatmap(lambda pick: odd if pick == 0 else strategy)


env = st.lists(or_odd(st.fixed_dictionaries(
    {"name": st.sampled_from(("IS_INJECTED", "OTHER")), "value": st.sampled_from(("true", "x"))})),
    max_size=2)
containers = st.lists(or_odd(st.fixed_dictionaries(
    {"name": st.sampled_from(NAMES), "image": st.sampled_from(IMAGES)},
    optional={"env": env, "ports": st.just([{"containerPort": 80}])})), max_size=3)
statuses = st.lists(or_odd(st.fixed_dictionaries(
    {"name": st.sampled_from(NAMES), "image": st.sampled_from(IMAGES)},
    optional={"imageID": st.sampled_from(IDS), "ready": st.booleans()})), max_size=3)
conditions = st.lists(or_odd(st.fixed_dictionaries(
    {"type": st.sampled_from(("Ready", "Ready", "PodScheduled")),
     "status": st.sampled_from(("True", "True", "False"))})),
    min_size=1, max_size=3)
last_statuses = st.dictionaries(st.sampled_from(NAMES), st.fixed_dictionaries(
    {"imageID": st.sampled_from(IDS)}), max_size=2)
state_annotations = st.fixed_dictionaries({}, optional={
    "kruise.io/related-pub": st.sampled_from(("web-server-pub", "")),
    "pub.kruise.io/no-protect": st.sampled_from(("true", "false")),
    "apps.kruise.io/inplace-update-grace": st.just("{}"),
    "apps.kruise.io/inplace-update-state": st.one_of(st.just("not json"), st.builds(
        lambda last, nxt: json.dumps({"lastContainerStatuses": last, **nxt}), last_statuses,
        st.sampled_from(({}, {"nextContainerImages": {"main": "nginx:2"}})))),
    "kruise.io/sidecarset-injected-list": st.sampled_from(("mesh", "mesh,log", "")),
    "kruise.io/sidecarset-inplace-update-state": st.builds(
        lambda last: json.dumps({"mesh": {"lastContainerStatuses": last}}), last_statuses),
    "prometheus.io/scrape": st.just("true"),
})
labels = st.dictionaries(st.sampled_from(("app", "app", "unavailable-pod.kruise.io/drain",
                                          "pod-template-hash")), st.sampled_from(("web", "x")),
                         max_size=2)


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any]:
    whole = pod("p", related=None,
                phase=draw(st.sampled_from(("Running", "Running", "Running", "Pending", "Failed"))),
                deleting=draw(st.integers(0, 3)) == 0)
    metadata = whole["metadata"]
    metadata["labels"] = draw(or_odd(labels))
    metadata["annotations"] = draw(or_odd(state_annotations))
    if draw(st.booleans()):
        metadata["namespace"] = draw(or_odd(st.just("other")))
    whole["spec"] = draw(or_odd(st.fixed_dictionaries({"containers": or_odd(containers)})))
    status = whole["status"] if isinstance(whole["status"], dict) else {}
    status["conditions"] = draw(or_odd(conditions))
    status["containerStatuses"] = draw(or_odd(statuses))
    if draw(st.integers(0, 5)) == 0:
        whole["status"] = draw(odd)
    return whole


@settings(max_examples=1000, deadline=None)
@given(pods(), st.sampled_from(("EVICT", "DELETE")), st.integers(0, 2))
def test_a_kept_pod_is_decided_on_as_the_whole_pod(
    whole: dict[str, Any], operation: str, allowed: int
) -> None:
    short = kept(whole)
    assert pod_health.available(short) == pod_health.available(whole)
    assert pod_health.ready(short) == pod_health.ready(whole)
    assert pod_health.consistent(short) == pod_health.consistent(whole)
    assert related_pub(short) == related_pub(whole)
    assert namespace_of(short) == namespace_of(whole)
    pub = budget(status={"unavailableAllowed": allowed, "desiredAvailable": 1})
    parsed = decisions.parsed_budget(pub)
    whole_decision, kept_decision = (
        decisions.decide(operation, candidate, parsed, pub["status"], old_pod=None, now=NOW,
                         dry_run=False)
        for candidate in (whole, short)
    )
    assert kept_decision == whole_decision


@pytest.mark.parametrize("whole", [
    *(case[1] for case in CASES),
    sidecar_pod("envoy-1", "envoy:1"),
    sidecar_pod("envoy-2", "envoy:2"),
    sidecar_pod("envoy-1", "envoy:1", sets="other"),
], ids=[*(case[0] for case in CASES), "sidecar stale", "sidecar updated", "sidecar other set"])
def test_the_consistency_cases_read_alike_on_the_kept_pod(whole: dict[str, Any]) -> None:
    assert pod_health.consistent(kept(whole)) == pod_health.consistent(whole)
    assert pod_health.available(kept(whole)) == pod_health.available(whole)
