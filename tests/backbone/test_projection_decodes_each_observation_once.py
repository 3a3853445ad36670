"""The projection hands every reader of an object in a round the same decoded form, decoded once
per observation: equal to a fresh decode of the latest observation, a new one once the object
changed, and nothing once it is gone."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.projection.kube_state import KubeProjection, object_key, resource_key
from tests.backbone.log_builders import random_log

RKEY = resource_key("c1", "apps", "deployments")
NAMES = [f"d{i}" for i in range(30)]


@given(st.integers(min_value=0, max_value=10_000), st.lists(st.sampled_from(NAMES), max_size=40))
@settings(max_examples=25, deadline=None)
def test_the_decoded_form_follows_every_observation(seed: int, asked: list[str]) -> None:
    projection = KubeProjection()
    kept: dict[str, tuple[int, object]] = {}
    for position, (seq, subject, data) in enumerate(random_log(seed, count=200)):
        projection.apply(seq, subject, data)
        name = asked[position % len(asked)] if asked else NAMES[seq % len(NAMES)]
        okey = object_key("default", name)
        got = projection.decoded(RKEY, okey)
        assert got == projection.get("c1", "apps", "deployments", "default", name)
        stored = projection.objects("c1", "apps", "deployments").get(okey)
        if got is None:
            assert stored is None
            kept.pop(name, None)
            continue
        assert stored is not None
        if name in kept and kept[name][0] == stored.seq:
            assert got is kept[name][1]  # the same observation: decoded once
        elif name in kept:
            assert got is not kept[name][1]
        kept[name] = (stored.seq, got)
