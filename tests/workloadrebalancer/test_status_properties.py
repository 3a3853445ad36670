"""Properties of the status sync over any previous status, spec and resolution."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from spreadbus.features.workloadrebalancer.core.model import (
    FAILED,
    SUCCESSFUL,
    ObservedWorkload,
    Status,
    WorkloadRebalancer,
    WorkloadRef,
)
from spreadbus.features.workloadrebalancer.core.status import Placement, sync

NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)

refs = st.builds(
    WorkloadRef,
    api_version=st.sampled_from(["apps/v1", "v1", "apps.kruise.io/v1alpha1", "a/v1"]),
    kind=st.sampled_from(["Deployment", "ConfigMap", "UnitedDeployment", "Kind"]),
    name=st.sampled_from(["a", "b", "a-b", "z", "é"]),
    namespace=st.sampled_from(["", "default", "ns"]),
)
entries = st.builds(ObservedWorkload, workload=refs,
                    result=st.sampled_from([SUCCESSFUL, FAILED, ""]),
                    reason=st.just(""))
outcomes = st.sampled_from(["missing", "delivered", "waiting"])


@st.composite
def cases(draw: st.DrawFn) -> tuple[WorkloadRebalancer, dict[WorkloadRef, str]]:
    spec = tuple(draw(st.lists(refs, min_size=1, max_size=6)))
    # The controller writes one entry per workload.
    previous = tuple(draw(st.lists(entries, max_size=6, unique_by=lambda e: e.workload)))
    status = Status(observed_workloads=previous, observed_generation=draw(st.integers(0, 3)),
                    finish_time=draw(st.sampled_from([None, NOW - timedelta(seconds=30)])))
    wr = WorkloadRebalancer(name="r", uid="u", generation=draw(st.integers(1, 3)),
                            workloads=spec, status=status,
                            ttl_seconds_after_finished=draw(st.sampled_from([None, 0, 10, 60])))
    fate = {ref: draw(outcomes) for ref in {*spec, *(e.workload for e in previous)}}
    return wr, fate


def resolver(fate: dict[WorkloadRef, str]):  # type: ignore[no-untyped-def]
    def resolve(ref: WorkloadRef) -> Placement | None:
        if fate[ref] == "missing":
            return None
        return Placement(kind="WorkloadSpread", namespace="ns", name="w",
                         delivered=fate[ref] == "delivered")
    return resolve


@given(cases())
def test_entries_are_sorted_and_every_listed_workload_has_one(
    case: tuple[WorkloadRebalancer, dict[WorkloadRef, str]],
) -> None:
    wr, fate = case
    status = sync(wr, resolver(fate), NOW).status
    keys = [e.workload.sort_key.encode() for e in status.observed_workloads]
    assert keys == sorted(keys)
    listed = {e.workload for e in status.observed_workloads}
    assert set(wr.workloads) <= listed
    for entry in status.observed_workloads:
        if entry.workload not in wr.workloads:
            assert entry.result == SUCCESSFUL, "only a succeeded entry outlives its spec line"
    assert status.observed_generation == wr.generation


@given(cases())
def test_a_second_pass_over_the_written_status_changes_nothing_once_finished(
    case: tuple[WorkloadRebalancer, dict[WorkloadRef, str]],
) -> None:
    wr, fate = case
    first = sync(wr, resolver(fate), NOW)
    again = WorkloadRebalancer(name=wr.name, uid=wr.uid, generation=wr.generation,
                               workloads=wr.workloads, status=first.status,
                               ttl_seconds_after_finished=wr.ttl_seconds_after_finished)
    second = sync(again, resolver(fate), NOW + timedelta(seconds=5))
    if first.finished:
        assert not second.write
        assert second.status == first.status
    else:
        assert first.status.finish_time == wr.status.finish_time
        assert first.triggers
        assert not first.delete


@given(cases())
def test_results_once_given_are_kept(
    case: tuple[WorkloadRebalancer, dict[WorkloadRef, str]],
) -> None:
    wr, fate = case
    status = sync(wr, resolver(fate), NOW).status
    before = {e.workload: e.result for e in wr.status.observed_workloads if e.result}
    for entry in status.observed_workloads:
        if entry.workload in before and entry.workload in set(wr.workloads):
            first = next(e for e in wr.status.observed_workloads if e.workload == entry.workload)
            assert entry.result == first.result


@given(cases())
def test_delete_exactly_when_finished_and_the_ttl_has_passed(
    case: tuple[WorkloadRebalancer, dict[WorkloadRef, str]],
) -> None:
    wr, fate = case
    outcome = sync(wr, resolver(fate), NOW)
    ttl = wr.ttl_seconds_after_finished
    finish = outcome.status.finish_time
    expected = (ttl is not None and outcome.finished and finish is not None
                and finish + timedelta(seconds=ttl) <= NOW)
    if outcome.finished and not outcome.write:
        assert finish == wr.status.finish_time  # a final status stored is not rewritten
    assert outcome.delete == expected
    if outcome.requeue_at is not None:
        assert not outcome.delete
        assert outcome.requeue_at > NOW
