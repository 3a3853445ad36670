"""A plan applied is a fixed point: the next round over what it made changes nothing."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.uniteddeployment.world import materialize, run, settled_pods, united, zone

JSON = dict[str, Any]

_kinds = st.sampled_from(
    ["statefulSetTemplate", "advancedStatefulSetTemplate", "cloneSetTemplate", "deploymentTemplate"]
)
_patches = st.one_of(
    st.none(),
    st.builds(
        lambda value: {
            "spec": {"containers": [{"name": "main", "env": [{"name": "Z", "value": value}]}]}
        },
        st.text("abc", max_size=3),
    ),
)


@settings(max_examples=40, deadline=None)
@given(
    key=_kinds,
    total=st.integers(0, 9),
    count=st.integers(1, 3),
    partitions=st.lists(st.integers(0, 4), min_size=3, max_size=3),
    patch=_patches,
    images=st.lists(st.sampled_from(["nginx:1", "nginx:2"]), min_size=2, max_size=2),
)
def test_a_round_over_what_the_last_one_made_changes_nothing(
    key: str,
    total: int,
    count: int,
    partitions: list[int],
    patch: JSON | None,
    images: list[str],
) -> None:
    subsets = [zone(f"s{i}", **({} if patch is None else {"patch": patch})) for i in range(count)]
    ud = united(
        subsets,
        replicas=total,
        key=key,
        image=images[0],
        partitions={f"s{i}": partitions[i] for i in range(count)},
    )
    first = run(ud)
    workloads = [materialize(d.workload, suffix=n) for n, d in first.subsets.items()]
    revisions = list(first.revision_creates)
    ud["status"] = first.status
    # A template change: every workload is updated, then settles too.
    changed = copy.deepcopy(ud)
    changed["spec"]["template"][key]["spec"]["template"]["spec"]["containers"][0]["image"] = images[
        1
    ]
    second = run(changed, *settled_pods(workloads), revisions)
    updated = [materialize(d.workload) for d in second.subsets.values()]
    changed["status"] = second.status
    third = run(changed, *settled_pods(updated), [*revisions, *second.revision_creates])
    for decision in third.subsets.values():
        # Kruise's quirk: a Deployment reads its partition back as 0, so a non-zero one is
        # written again every round.
        requeued = key == "deploymentTemplate" and decision.partition
        assert decision.action == ("update" if requeued else "none")
    assert third.revision_creates == []
    assert third.deletes == []
    assert third.status["subsetReplicas"] == second.status["subsetReplicas"]
    if images[0] == images[1] and key != "deploymentTemplate":
        assert {d.action for d in second.subsets.values()} <= {"none"}
