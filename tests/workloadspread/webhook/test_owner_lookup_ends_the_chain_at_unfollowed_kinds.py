"""An owner lookup answers, for every kind, what the view holds once the kind's resource has
been listed, and a chain end (an object with no controller, reported as unfollowed) before then
or for kinds the view does not watch; asked as one question, the view answers as the two
questions :meth:`View.follows` and :meth:`View.lookup` do."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from spreadbus.features.workloadspread.admission.view import View
from tests.workloadspread.webhook.cluster_state import Feed, workload

KINDS = (
    ("apps", "ReplicaSet", "replicasets"),
    ("apps", "Deployment", "deployments"),
    ("batch", "Job", "jobs"),
    ("example.com", "Widget", "widgets"),
)


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
    feed = Feed(View(cluster="c1"))
    for (group, kind, _), name in sorted(held):
        feed.put(workload(f"{group}/v1", kind, name, {}))
    feed.sync(*(kind for _, kind, _ in sorted(listed)))
    view = feed.view
    (group, kind, resource), name = asked
    watched = (group, resource) in view.watched
    followed = watched and (group, kind, resource) in listed
    expected = workload(f"{group}/v1", kind, name, {}) if watched and (asked in held) else None
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
