"""Two versions of a pod that read alike are counted alike.

The webhook's view re-reads a pod only when a new version differs in what
:func:`~spreadbus.features.workloadspread.core.occupancy.reads_alike` compares; that fast path is
right only if every field the counting rule reads is among them. Random pairs of versions, apart
in up to three fields (read by the rule or not), check it.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.features.workloadspread.core.occupancy import occupant, reads_alike
from tests.core.pod_histories import FIELDS, NAMES, field_values, pod_fields, pod_object

VERSIONED = (frozenset({"deployment", "replicaset"}), frozenset({"statefulset", "pod"}))


@settings(max_examples=500, deadline=None)
@given(st.data())
def test_two_versions_that_read_alike_have_the_same_reading(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(NAMES))
    fields = data.draw(pod_fields(name))
    changed = data.draw(st.lists(st.sampled_from(FIELDS), max_size=3, unique=True))
    other = {**fields, **{field: data.draw(field_values(name, field)) for field in changed}}
    before, after = pod_object(name, fields), pod_object(name, other)
    if reads_alike(before, after):
        for kinds in VERSIONED:
            assert occupant(before, kinds) == occupant(after, kinds)


def test_a_pod_that_starts_reads_alike_and_one_that_ends_does_not() -> None:
    fields = {"annotations": {"apps.kruise.io/matched-workloadspread":
                              '{"name":"ws","subset":"zone-a"}'},
              "phase": "Pending", "node": "", "condition": "False", "resourceVersion": "1"}
    pending = pod_object("a", fields)
    running = pod_object("a", {**fields, "phase": "Running", "node": "n1", "condition": "True",
                               "resourceVersion": "2"})
    done = pod_object("a", {**fields, "phase": "Succeeded", "resourceVersion": "3"})
    assert reads_alike(pending, running)
    assert not reads_alike(running, done)
    assert occupant(running).claim == ("ws", ("versionIgnored", "zone-a"))
    assert occupant(done).claim is None
