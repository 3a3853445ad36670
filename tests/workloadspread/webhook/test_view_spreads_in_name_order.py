"""The view's WorkloadSpreads of a namespace, kept sorted between changes, are always those it
holds, in name order, whatever sequence of creations, updates and deletions it folded and
however often it was asked in between."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from events.messages import WatchEventType
from spreadbus.features.workloadspread.admission.view import View
from tests.workloadspread.webhook.cluster_state import Feed

NAMESPACES = ("default", "team-a")
NAMES = ("web", "api", "db")


def spread(namespace: str, name: str, subsets: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "WorkloadSpread",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "subsets": [{"name": f"zone-{n}"} for n in range(subsets)],
        },
    }


steps = st.lists(
    st.tuples(
        st.sampled_from(("ADDED", "MODIFIED", "DELETED")),
        st.sampled_from(NAMESPACES),
        st.sampled_from(NAMES),
        st.integers(1, 3),
        st.booleans(),
    ),
    max_size=25,
)


@settings(max_examples=80, deadline=None)
@given(steps)
def test_spreads_of_a_namespace_follow_every_change_in_name_order(
    history: list[tuple[WatchEventType, str, str, int, bool]],
) -> None:
    feed = Feed(View(cluster="c1"))
    view = feed.view
    held: dict[tuple[str, str], int] = {}
    for event, namespace, name, subsets, ask in history:
        feed.put(spread(namespace, name, subsets), event)
        if event == "DELETED":
            held.pop((namespace, name), None)
        else:
            held[(namespace, name)] = subsets
        for ns in NAMESPACES if ask else ():
            answer = view.spreads_in(ns)
            expected = sorted((n, s) for (k, n), s in held.items() if k == ns)
            assert [(ws.name, len(ws.subsets)) for ws in answer] == expected
            answer.clear()  # the caller's own list: the view's next answer is unchanged
            assert len(view.spreads_in(ns)) == len(expected)
