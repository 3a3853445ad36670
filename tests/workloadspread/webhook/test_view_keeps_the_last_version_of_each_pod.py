"""A view that folded every version of its pods holds and counts the last version of each.

The view keeps a compact form of each pod and skips the reading of a version whose kept form is
unchanged, so the other view tests, which recount from the pods the view hands out, cannot see a
version it failed to take in. This one checks against the history itself: over random
histories, the pods the view holds are the kept forms of the last version of every pod not
deleted, and its indexes are those of a fresh view fed those whole last versions.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings

from spreadbus.features.workloadspread.admission.kept_pod import KeptPod
from spreadbus.features.workloadspread.admission.view import View
from tests.workloadspread.core.pod_histories import NAMES, SPREADS, History, histories
from tests.workloadspread.webhook.cluster_state import fold_pods


def last_versions(history: History) -> dict[str, dict[str, Any]]:
    pods: dict[str, dict[str, Any]] = {}
    for event, pod in history:
        if event == "DELETED":
            pods.pop(pod["metadata"]["name"], None)
        else:
            pods[pod["metadata"]["name"]] = pod
    return pods


def indexes(view: View) -> tuple[object, ...]:
    slots = {
        spread: {slot: sorted(names) for slot, names in view.slots_of("default", spread).items()
                 if names}
        for spread in SPREADS
    }
    keys = (*(f"r-{name}" for name in NAMES), *NAMES)
    return (
        slots,
        {key: view.seen("default", key) for key in keys},
        {name: view.active("default", name) for name in NAMES},
    )


@settings(max_examples=300, deadline=None)
@given(histories())
def test_the_view_holds_and_counts_the_last_version_of_every_pod(history: History) -> None:
    followed = View(cluster="c1")
    fold_pods(followed, history)
    last = last_versions(history)
    held = dict(followed.objects.get(("", "pods"), {}))
    assert held == {("default", name): KeptPod.of(pod, name, "default").to_object()
                    for name, pod in last.items()}
    fresh = View(cluster="c1")
    fold_pods(fresh, [("ADDED", pod) for pod in last.values()])
    assert indexes(followed) == indexes(fresh)
