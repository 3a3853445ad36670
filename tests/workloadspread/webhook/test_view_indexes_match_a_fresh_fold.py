"""A view that folded every version of its pods indexes them as one that saw only the last.

The view keeps a pod's index entries when a new version changes nothing they are computed from
(most pod changes are status updates), so this checks, over random histories, that what it
keeps is always what indexing the final versions from scratch gives: the subset counts per
spread, the reservation keys seen and the pods active. The histories vary what the indexes read
(annotation, labels, owner, kind, phase, deletion) and what they do not (resource version,
conditions, node), one field per version.
"""

from __future__ import annotations

from hypothesis import given, settings

from spreadbus.features.workloadspread.admission.view import View
from tests.workloadspread.core.pod_histories import NAMES, SPREADS, History, histories
from tests.workloadspread.webhook.cluster_state import fold_pods


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
def test_folding_every_version_indexes_pods_as_folding_only_the_last_does(
    history: History,
) -> None:
    followed = View(cluster="c1")
    fold_pods(followed, history)
    fresh = View(cluster="c1")
    fold_pods(fresh, [("ADDED", pod) for pod in followed.objects.get(("", "pods"), {}).values()])
    assert indexes(followed) == indexes(fresh)
