"""After a restore every object counts as changed: the keys handed out are the same whether
the projection records them one by one or lists them when asked."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.projection.kube_state import KubeProjection
from tests.backbone.log_builders import random_log


def eager_keys(projection: KubeProjection) -> set[tuple[str, str]]:
    return {(rkey, okey) for rkey, bucket in projection.state.objects.items() for okey in bucket}


@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=0, max_value=400),
       st.integers(min_value=0, max_value=400))
@settings(max_examples=40, deadline=None)
def test_marking_everything_changed_hands_out_every_object_then_every_key_touched_since(
    seed: int, mark_at: int, take_at: int
) -> None:
    log = random_log(seed)
    projection = KubeProjection()
    expected: set[tuple[str, str]] = set()
    for index, (seq, subject, data) in enumerate(log):
        if index == mark_at:
            projection.mark_all_changed()
            expected |= eager_keys(projection)  # on top of what was not taken yet
        if index == take_at:
            assert projection.take_changed() == expected
            expected = set()
        before = eager_keys(projection)
        projection.apply(seq, subject, data)
        after = eager_keys(projection)
        tokens = subject.split(".")
        if len(tokens) == 7:
            key = (".".join(tokens[2:5]), ".".join(tokens[5:]))
            if key in before or key in after:
                expected.add(key)  # written, or deleted while present
    assert projection.take_changed() == expected
    assert projection.take_changed() == set()


def test_a_deletion_after_marking_is_handed_out_although_the_object_is_gone() -> None:
    log = random_log(11)
    projection = KubeProjection()
    for seq, subject, data in log:
        projection.apply(seq, subject, data)
    projection.take_changed()
    present = eager_keys(projection)
    projection.mark_all_changed()
    deleted = [entry for entry in random_log(12) if b'"event":"DELETED"' in entry[2]]
    assert deleted, "the generated log deletes something"
    seq = projection.last_seq
    for offset, (_, subject, data) in enumerate(deleted, start=1):
        projection.apply(seq + offset, subject, data)
    gone = present - eager_keys(projection)
    assert gone, "some present object was deleted"
    assert projection.take_changed() == present
