"""The HPA's arithmetic as upstream computes it: proposals per metric, stabilization, rates.

Cases named after upstream's replica_calculator_test.go carry its inputs and expected outputs.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesim.behaviour.pod_metrics import CPU_USAGE_ANNOTATION, sample
from kubesim.behaviour.quantity import format_milli
from kubesim.behaviour.replica_calculator import (
    MetricError,
    PodSample,
    Timing,
    average_value_replicas,
    utilization_replicas,
)
from kubesim.behaviour.scale_normalization import (
    History,
    normalize,
    normalize_with_behavior,
    scale_down_limit,
    scale_up_limit,
    store_scale_event,
)
from kubesim.horizontalpodautoscaler import default_scale_down_rules, default_scale_up_rules

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LONG_AGO = NOW - timedelta(hours=1)
TIMING = Timing(now=NOW)


def pods(
    levels: list[int], requests: list[int] | None = None, ready: list[str] | None = None
) -> list[PodSample]:
    """Running pods started an hour ago, ready since then, with these usage levels."""
    return [
        PodSample(
            name=f"p{i}",
            ready=(ready or ["True"] * len(levels))[i],
            ready_since=LONG_AGO,
            started=LONG_AGO,
            request=(requests or [1000] * len(levels))[i],
            usage=level,
        )
        for i, level in enumerate(levels)
    ]


def test_scale_up_proposes_the_ratio_of_ready_pods() -> None:
    # TestReplicaCalcScaleUp
    proposal = utilization_replicas(3, 30, pods([300, 500, 700]), "cpu", TIMING)
    assert (proposal.replicas, proposal.utilization, proposal.average) == (5, 50, 500)


def test_scale_down_proposes_the_ratio_of_ready_pods() -> None:
    # TestReplicaCalcScaleDown
    proposal = utilization_replicas(5, 50, pods([100, 300, 500, 250, 250]), "cpu", TIMING)
    assert (proposal.replicas, proposal.utilization, proposal.average) == (3, 28, 280)


def test_an_unready_pod_counts_as_idle_on_a_scale_up() -> None:
    # TestReplicaCalcScaleUpUnreadyLessScale
    proposal = utilization_replicas(
        3, 30, pods([300, 500, 700], ready=["False", "True", "True"]), "cpu", TIMING
    )
    assert (proposal.replicas, proposal.utilization, proposal.average) == (4, 60, 600)


def test_unready_pods_that_would_turn_a_scale_up_around_keep_the_count() -> None:
    # TestReplicaCalcScaleUpUnreadyNoScale
    proposal = utilization_replicas(
        3, 30, pods([400, 500, 700], ready=["True", "False", "False"]), "cpu", TIMING
    )
    assert (proposal.replicas, proposal.utilization) == (3, 40)


def test_within_the_tolerance_the_count_stands() -> None:
    proposal = utilization_replicas(4, 50, pods([540, 540, 540, 540]), "cpu", TIMING)
    assert proposal.replicas == 4
    assert utilization_replicas(4, 50, pods([560] * 4), "cpu", TIMING).replicas == 5


def test_pods_without_a_sample_count_as_fully_used_on_a_scale_down() -> None:
    samples = [*pods([100, 100, 100]), PodSample(name="new", started=LONG_AGO, request=1000)]
    # 10% of the sampled pods, but the unsampled one at 100% holds the count (new ratio 0.55)
    proposal = utilization_replicas(4, 50, samples, "cpu", TIMING)
    assert proposal.replicas == 3
    alone = utilization_replicas(4, 50, pods([100, 100, 100]), "cpu", TIMING)
    assert alone.replicas == 1


def test_pending_deleted_and_failed_pods_do_not_count() -> None:
    samples = [
        *pods([800, 800]),
        PodSample(name="pending", phase="Pending", request=1000),
        PodSample(name="gone", deleting=True, request=1000, usage=0),
        PodSample(name="failed", phase="Failed", request=1000, usage=0),
    ]
    # 80% of two ready pods against 40%: four, less the pending pod assumed idle (ratio 1.33)
    assert utilization_replicas(2, 40, samples, "cpu", TIMING).replicas == 4


def test_a_pod_in_its_cpu_initialization_period_counts_only_when_ready() -> None:
    just_started = PodSample(
        name="fresh", ready="False", ready_since=NOW, started=NOW, request=1000, usage=900
    )
    samples = [*pods([900]), just_started]
    # the fresh pod's 900m is ignored and counted as idle on the way up: ratio (900/2000)/0.5
    assert utilization_replicas(2, 50, samples, "cpu", TIMING).replicas == 2
    ready_fresh = PodSample(
        name="fresh", ready="True", ready_since=NOW, started=NOW, request=1000, usage=900
    )
    assert utilization_replicas(2, 50, [*pods([900]), ready_fresh], "cpu", TIMING).replicas == 4


def test_memory_ignores_readiness() -> None:
    samples = pods([900, 900], ready=["False", "True"])
    assert utilization_replicas(2, 50, samples, "memory", TIMING).replicas == 4


def test_a_container_without_a_request_is_named_in_the_error() -> None:
    samples = [*pods([100]), PodSample(name="web-2", request=None, missing_request="app", usage=1)]
    with pytest.raises(MetricError, match="missing request for cpu in container app of Pod web-2"):
        utilization_replicas(2, 50, samples, "cpu", TIMING)


def test_no_samples_and_no_ready_samples_are_errors_in_upstream_words() -> None:
    with pytest.raises(MetricError, match="no metrics returned from resource metrics API"):
        utilization_replicas(1, 50, [PodSample(name="p", phase="Pending")], "cpu", TIMING)
    # not ready since ten seconds after it started, long ago: never ready
    never_ready = LONG_AGO + timedelta(seconds=10)
    unready = [
        PodSample(
            name="p", ready="False", started=LONG_AGO, ready_since=never_ready, request=1, usage=5
        )
    ]
    with pytest.raises(MetricError, match=r"did not receive metrics for targeted pods"):
        utilization_replicas(1, 50, unready, "cpu", TIMING)


def test_average_value_targets_compare_the_mean_usage() -> None:
    proposal = average_value_replicas(3, 200, pods([300, 500, 700]), "cpu", TIMING)
    assert (proposal.replicas, proposal.average, proposal.utilization) == (8, 500, None)
    assert average_value_replicas(3, 480, pods([300, 500, 700]), "cpu", TIMING).replicas == 3


@given(
    levels=st.lists(st.integers(0, 5000), min_size=1, max_size=12),
    target=st.integers(1, 200),
    current=st.integers(1, 30),
)
def test_with_every_pod_ready_the_proposal_is_the_ceiling_of_ratio_times_pods(
    levels: list[int], target: int, current: int
) -> None:
    proposal = utilization_replicas(current, target, pods(levels), "cpu", TIMING)
    utilization = sum(levels) * 100 // (1000 * len(levels))
    ratio = utilization / target
    assert proposal.utilization == utilization
    if abs(1 - ratio) <= 0.1:
        assert proposal.replicas == current
    else:
        assert proposal.replicas == math.ceil(ratio * len(levels))


@given(
    levels=st.lists(st.integers(0, 3000), min_size=2, max_size=10),
    readiness=st.lists(st.sampled_from(["True", "False"]), min_size=10, max_size=10),
    target=st.integers(10, 150),
)
def test_assumptions_about_unready_pods_never_reverse_the_direction(
    levels: list[int], readiness: list[str], target: int
) -> None:
    current = len(levels)
    samples = pods(levels, ready=readiness[: len(levels)])
    try:
        proposal = utilization_replicas(current, target, samples, "cpu", TIMING)
    except MetricError:
        return
    assert proposal.utilization is not None
    if proposal.utilization > target:
        assert proposal.replicas >= current
    elif proposal.utilization < target:
        assert proposal.replicas <= current


# --- pod samples -------------------------------------------------------------------------------


def test_a_pod_sample_reads_the_usage_annotation_and_sums_container_requests() -> None:
    pod = {
        "metadata": {"name": "web-1", "annotations": {CPU_USAGE_ANNOTATION: "250m"}},
        "spec": {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "100m"}}},
                {"name": "b", "resources": {"requests": {"cpu": "0.2"}}},
            ],
            "initContainers": [
                {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": 1}}},
                {"name": "once", "resources": {}},
            ],
        },
        "status": {
            "phase": "Running",
            "startTime": "2026-01-01T11:00:00Z",
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T11:00:05Z"}
            ],
        },
    }
    got = sample(pod, "cpu")
    assert (got.usage, got.request, got.ready) == (250, 1300, "True")
    assert got.ready_since == datetime(2026, 1, 1, 11, 0, 5, tzinfo=UTC)
    assert sample(pod, "memory").usage == 0  # no annotation: an idle pod
    assert sample(pod, "memory").missing_request == "a"
    pending = {**pod, "status": {"phase": "Pending"}}
    assert sample(pending, "cpu").usage is None
    broken = {**pod, "metadata": {"name": "x", "annotations": {CPU_USAGE_ANNOTATION: "lots"}}}
    assert sample(broken, "cpu").usage is None


@pytest.mark.parametrize(
    ("milli", "text"),
    [(0, "0"), (250, "250m"), (1000, "1"), (1500, "1500m"), (3_000_000, "3k"), (10**12, "1G")],
)
def test_milli_values_print_in_canonical_decimal_form(milli: int, text: str) -> None:
    assert format_milli(milli) == text


# --- normalization without behavior ----------------------------------------------------------


def test_a_scale_down_waits_for_the_highest_recommendation_of_the_window() -> None:
    history = History()
    window = timedelta(minutes=5)
    history.record_initial(8, NOW)
    held = normalize(history, 8, 2, 1, 10, NOW + timedelta(minutes=1), window)
    assert (held.replicas, held.able_reason, held.limited) == (8, "ScaleDownStabilized", False)
    later = normalize(history, 8, 3, 1, 10, NOW + timedelta(minutes=5, seconds=30), window)
    # the initial 8 has left the window; the 2 of a minute ago is lower than the 3 of now
    assert (later.replicas, later.able_reason) == (3, "ReadyForNewScale")


def test_bounds_and_the_scale_up_limit_name_their_reason() -> None:
    window = timedelta(0)
    fast = normalize(History(), 3, 20, 1, 50, NOW, window)
    assert (fast.replicas, fast.limited, fast.limited_reason) == (6, True, "ScaleUpLimit")
    small = normalize(History(), 1, 9, 1, 50, NOW, window)
    assert small.replicas == 4
    capped = normalize(History(), 5, 9, 1, 7, NOW, window)
    assert (capped.replicas, capped.limited_reason) == (7, "TooManyReplicas")
    floor = normalize(History(), 5, 1, 3, 7, NOW, window)
    assert (floor.replicas, floor.limited_reason) == (3, "TooFewReplicas")
    assert (
        floor.limited_message == "the desired replica count is less than the minimum replica count"
    )
    inside = normalize(History(), 5, 6, 3, 7, NOW, window)
    assert (inside.replicas, inside.limited, inside.limited_reason) == (
        6,
        False,
        "DesiredWithinRange",
    )


# --- normalization with behavior ---------------------------------------------------------------


def behavior(up: dict[str, object] | None = None, down: dict[str, object] | None = None) -> dict:
    return {
        "scaleUp": {**default_scale_up_rules(), **(up or {})},
        "scaleDown": {**default_scale_down_rules(), **(down or {})},
    }


def test_default_behavior_adds_four_pods_or_doubles_per_period() -> None:
    rules = default_scale_up_rules()
    assert scale_up_limit(3, History(), rules, NOW) == 7
    assert scale_up_limit(10, History(), rules, NOW) == 20
    assert scale_down_limit(10, History(), default_scale_down_rules(), NOW) == 0


def test_scale_events_of_the_period_count_against_the_policies() -> None:
    rules = {"selectPolicy": "Max", "policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}]}
    spec = {"scaleUp": rules, "scaleDown": default_scale_down_rules()}
    history = History()
    store_scale_event(history, spec, 3, 5, NOW)
    assert scale_up_limit(5, history, rules, NOW + timedelta(seconds=30)) == 5
    assert scale_up_limit(5, history, rules, NOW + timedelta(seconds=61)) == 7
    limited = normalize_with_behavior(
        history, spec, 5, 9, 1, 20, NOW + timedelta(seconds=30), timedelta(0)
    )
    assert (limited.replicas, limited.limited_reason) == (5, "ScaleUpLimit")


def test_select_policy_min_takes_the_smaller_change_and_disabled_none() -> None:
    policies = [
        {"type": "Pods", "value": 1, "periodSeconds": 15},
        {"type": "Percent", "value": 50, "periodSeconds": 15},
    ]
    assert scale_down_limit(10, History(), {"selectPolicy": "Min", "policies": policies}, NOW) == 9
    assert scale_down_limit(10, History(), {"selectPolicy": "Max", "policies": policies}, NOW) == 5
    disabled = behavior(down={"selectPolicy": "Disabled"})
    result = normalize_with_behavior(History(), disabled, 10, 2, 1, 20, NOW, timedelta(0))
    assert (result.replicas, result.limited_reason) == (10, "ScaleDownLimit")


def test_scale_up_stabilization_takes_the_lowest_recent_recommendation() -> None:
    history = History()
    history.record_initial(3, NOW)
    spec = behavior(up={"stabilizationWindowSeconds": 60})
    held = normalize_with_behavior(
        history, spec, 3, 6, 1, 20, NOW + timedelta(seconds=10), timedelta(0)
    )
    assert (held.replicas, held.able_reason) == (3, "ScaleUpStabilized")
    moved = normalize_with_behavior(
        history, spec, 3, 6, 1, 20, NOW + timedelta(seconds=75), timedelta(0)
    )
    assert moved.replicas == 6


def test_an_unset_scale_down_window_is_the_controllers_default() -> None:
    history = History()
    history.record_initial(6, NOW)
    spec = behavior()
    held = normalize_with_behavior(
        history, spec, 6, 2, 1, 20, NOW + timedelta(seconds=10), timedelta(seconds=60)
    )
    assert (held.replicas, held.able_reason) == (6, "ScaleDownStabilized")
    spec_now = behavior(down={"stabilizationWindowSeconds": 0})
    down = normalize_with_behavior(
        History(), spec_now, 6, 2, 1, 20, NOW + timedelta(seconds=10), timedelta(seconds=60)
    )
    assert down.replicas == 2
