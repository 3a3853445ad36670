"""The subsets a new pod skips are those whose status, top-level or of the pod's version, has a
first ``Schedulable`` condition that is ``False``, whatever other conditions come before or
after it: the rule :attr:`SubsetStatus.unschedulable` states for one status."""

from __future__ import annotations

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from spreadbus.features.workloadspread.core.model import (
    Condition,
    Status,
    SubsetStatus,
    from_object,
)
from spreadbus.features.workloadspread.core.subset_choice import unschedulable_subsets
from tests.workloadspread.core.builders import subset, workloadspread

NAMES = ("a", "b", "c")
conditions = st.lists(
    st.builds(
        Condition,
        type=st.sampled_from(["Schedulable", "Ready", "schedulable"]),
        status=st.sampled_from(["True", "False", "Unknown"]),
    ),
    max_size=3,
).map(tuple)
statuses = st.lists(
    st.builds(SubsetStatus, name=st.sampled_from(NAMES), conditions=conditions), max_size=4
).map(tuple)


@given(
    top=statuses,
    versioned=st.dictionaries(st.sampled_from(["v1", "v2"]), statuses, max_size=2),
    version=st.sampled_from([None, "v1", "v2"]),
)
def test_a_subset_is_skipped_when_a_status_it_reads_says_unschedulable(
    top: tuple[SubsetStatus, ...],
    versioned: dict[str, tuple[SubsetStatus, ...]],
    version: str | None,
) -> None:
    ws = from_object(workloadspread(*(subset(name, 2) for name in NAMES)))
    ws = msgspec.structs.replace(
        ws, status=Status(subset_statuses=top, versioned_subset_statuses=versioned)
    )
    read = [*top, *(versioned.get(version, ()) if version is not None else ())]
    expected = {s.name for s in read if s.unschedulable}
    assert unschedulable_subsets(ws, version) == expected
