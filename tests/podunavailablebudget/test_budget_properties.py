"""Properties of the budget: spending never exceeds the allowance, and a computed status keeps
its invariants whatever the pods and the recorded entries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.features.podunavailablebudget.core.admission import decide
from spreadbus.features.podunavailablebudget.core.budget import (
    DISRUPTED_TIMEOUT,
    UNAVAILABLE_TIMEOUT,
    compute_status,
)
from spreadbus.features.podunavailablebudget.core.model import from_object, status_to_json
from tests.podunavailablebudget.builders import budget, pod, replicaset, status, workload

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
NAMES = [f"p{i}" for i in range(8)]

requests = st.lists(
    st.tuples(
        st.sampled_from(NAMES),
        st.sampled_from(["DELETE", "EVICT", "UPDATE", "RESIZE"]),
        st.booleans(),  # dry run
        st.integers(min_value=0, max_value=30),  # seconds after NOW
    ),
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(allowed=st.integers(min_value=-2, max_value=6), desired=st.integers(0, 3),
       recorded=st.sets(st.sampled_from(NAMES), max_size=3), sequence=requests)
def test_a_sequence_of_decisions_never_spends_more_than_allowed(
    allowed: int, desired: int, recorded: set[str], sequence: list[tuple[str, Any, bool, int]]
) -> None:
    """Decisions against one status, each spend replacing it (the compare-and-set winner)."""
    maps = {"disruptedPods": {n: "2026-01-01T11:59:59Z" for n in recorded}}
    pub = from_object(budget(status=status(allowed, desired=desired, **maps)))
    spends = 0
    newly_recorded: set[str] = set()
    for name, operation, dry_run, seconds in sequence:
        decision = decide(pod(name), pub, operation=operation, dry_run=dry_run,
                          now=NOW + timedelta(seconds=seconds))
        if decision.status is not None:
            assert decision.allowed
            assert not dry_run
            assert name not in recorded | newly_recorded
            spends += 1
            newly_recorded.add(name)
            pub = msgspec.structs.replace(pub, status=decision.status)
    if desired > 0:
        assert spends <= max(0, allowed)
    else:
        assert spends == 0
    assert pub.status.unavailable_allowed == allowed - spends
    assert set(pub.status.disrupted_pods) | set(pub.status.unavailable_pods) == (
        recorded | newly_recorded)


pod_states = st.fixed_dictionaries({
    "ready": st.booleans(),
    "phase": st.sampled_from(["Running", "Running", "Pending", "Succeeded", "Failed"]),
    "deleting": st.booleans(),
    "related": st.sampled_from(["web-server-pub", None]),
})
ages = st.dictionaries(st.sampled_from([*NAMES, "gone"]), st.integers(0, 40), max_size=6)
int_or_percent = st.one_of(st.integers(0, 12), st.integers(0, 100).map(lambda n: f"{n}%"))


@settings(max_examples=300, deadline=None)
@given(
    states=st.lists(pod_states, max_size=len(NAMES)),
    replicas=st.integers(0, 10),
    disrupted=ages,
    unavailable=ages,
    use_max=st.booleans(),
    value=int_or_percent,
    total_annotation=st.one_of(st.none(), st.integers(-3, 12)),
)
def test_a_computed_status_keeps_its_invariants(
    states: list[dict[str, Any]], replicas: int, disrupted: dict[str, int],
    unavailable: dict[str, int], use_max: bool, value: object, total_annotation: int | None,
) -> None:
    deployment = workload(replicas=replicas)
    rs = replicaset(deployment)
    pods = [pod(NAMES[i], owner=rs, **s) for i, s in enumerate(states)]

    def ago(entries: dict[str, int]) -> dict[str, str]:
        return {n: (NOW - timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%SZ")
                for n, s in entries.items()}

    notes = ({"pub.kruise.io/protect-total-replicas": str(total_annotation)}
             if total_annotation is not None else None)
    stored = status(3, disruptedPods=ago(disrupted), unavailablePods=ago(unavailable))
    pub = budget(status=stored, annotations=notes,
                 max_unavailable=value if use_max else None,
                 min_available=None if use_max else value)
    result = compute_status(from_object(pub), workloads=[deployment, rs], pods=pods, now=NOW)
    got = result.status
    listed = set(result.pods)
    assert listed <= {pod_name for pod_name, s in zip(NAMES, states, strict=False)
                      if s["phase"] not in ("Succeeded", "Failed") and not s["deleting"]}
    if replicas == 0:
        assert listed == set()
    assert got.unavailable_allowed == max(0, got.current_available - got.desired_available)
    assert 0 <= got.current_available <= len(listed - set(got.disrupted_pods)
                                             - set(got.unavailable_pods))
    assert got.total_replicas == (total_annotation if total_annotation is not None
                                  else replicas)
    assert set(got.disrupted_pods) <= listed
    assert set(got.unavailable_pods) <= listed
    assert all(t + DISRUPTED_TIMEOUT >= NOW for t in got.disrupted_pods.values())
    assert all(t + UNAVAILABLE_TIMEOUT >= NOW for t in got.unavailable_pods.values())
    if result.requeue_at is not None:
        assert result.requeue_at >= NOW
    assert (result.requeue_at is None) == (not got.disrupted_pods and not got.unavailable_pods)
    written = status_to_json(got)
    assert written["observedGeneration"] == 1
    again = compute_status(
        from_object({**pub, "status": written}), workloads=[deployment, rs], pods=pods, now=NOW
    )
    assert not again.changed, "a second pass at the same time writes nothing"


@settings(max_examples=300, deadline=None)
@given(
    allowed=st.integers(0, 4),
    pods_of=st.lists(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4), min_size=1,
                     max_size=4),
    schedule=st.lists(st.integers(0, 3), max_size=60),
)
def test_replicas_deciding_on_stale_reads_and_compare_and_set_never_overspend(
    allowed: int, pods_of: list[list[str]], schedule: list[int]
) -> None:
    """Each replica reads (status, revision), decides, and writes only if the revision is still
    the one it read, else reads again: the webhook's protocol on the budget entry."""
    store = {"revision": 0,
             "pub": from_object(budget(status=status(allowed, desired=1)))}
    reads: dict[int, tuple[int, Any]] = {}
    queues = {i: list(names) for i, names in enumerate(pods_of)}
    admitted: list[str] = []
    for step in schedule:
        replica = step % len(pods_of)
        if not queues[replica]:
            continue
        if replica not in reads:
            reads[replica] = (store["revision"], store["pub"])
            continue
        revision, seen = reads.pop(replica)
        name = queues[replica][0]
        decision = decide(pod(name), seen, operation="DELETE", now=NOW)
        if decision.status is None:
            queues[replica].pop(0)
            if decision.allowed:
                admitted.append(name)
            continue
        if revision != store["revision"]:
            continue  # conflict: read again and decide again
        store["revision"] += 1
        store["pub"] = msgspec.structs.replace(seen, status=decision.status)
        queues[replica].pop(0)
        admitted.append(name)
    final = store["pub"].status
    assert len(final.disrupted_pods) <= allowed
    assert final.unavailable_allowed == allowed - len(final.disrupted_pods)
    assert set(admitted) <= set(final.disrupted_pods)
