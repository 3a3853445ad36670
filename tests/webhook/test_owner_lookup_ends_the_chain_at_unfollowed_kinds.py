"""An owner lookup answers, for every kind, what the view holds once the kind's resource has
been listed, and a chain end (an object with no controller, reported as unfollowed) before then
or for kinds the view does not watch; asked as one question, the view answers as the two
questions :meth:`View.follows` and :meth:`View.lookup` do."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from events.codec import encode
from events.messages import Observation, SyncMarker
from services.webhook.view import View

KINDS = (
    ("apps", "ReplicaSet", "replicasets"),
    ("apps", "Deployment", "deployments"),
    ("batch", "Job", "jobs"),
    ("example.com", "Widget", "widgets"),
)


def owner(group: str, kind: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{group}/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "default"},
    }


@given(
    held=st.sets(st.tuples(st.sampled_from(KINDS), st.sampled_from(["web", "db"]))),
    listed=st.sets(st.sampled_from(KINDS)),
    asked=st.tuples(st.sampled_from(KINDS), st.sampled_from(["web", "db"])),
)
def test_an_owner_is_followed_once_its_kind_is_listed(
    held: set[tuple[tuple[str, str, str], str]],
    listed: set[tuple[str, str, str]],
    asked: tuple[tuple[str, str, str], str],
) -> None:
    view = View(cluster="c1")
    seq = 0
    for (group, kind, resource), name in sorted(held):
        seq += 1
        message = Observation(cluster="c1", group=group, version="v1", resource=resource,
                              event="ADDED", object=owner(group, kind, name))
        view.apply_message(seq, "kube.obs.c1", encode(message))
    for group, _, resource in sorted(listed):
        seq += 1
        marker = SyncMarker(cluster="c1", group=group, version="v1", resource=resource,
                            complete=True)
        view.apply_message(seq, "kube.sync.c1", encode(marker))
    (group, kind, resource), name = asked
    watched = (group, resource) in view.watched
    followed = watched and (group, kind, resource) in listed
    expected = owner(group, kind, name) if watched and (asked in held) else None
    assert view.follows(group, kind) is followed
    assert view.lookup("default", group, kind, name) == expected
    assert view.followed_lookup("default", group, kind, name) == (
        followed, expected if followed else None
    )
    unfollowed: list[tuple[str, str, str, str]] = []
    found = view.owner_lookup(lambda *owner: unfollowed.append(owner))(
        "default", group, kind, name
    )
    if followed:
        assert found == expected
        assert unfollowed == []
    else:
        assert found == {"metadata": {}}
        assert unfollowed == [("default", group, kind, name)]
