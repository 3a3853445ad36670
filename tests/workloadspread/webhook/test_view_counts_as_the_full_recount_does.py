"""The webhook's count from its view equals the full recount over the pods it folded.

The view keeps the counting rule's readings of its pods, updated pod event by pod event, so that
an admission never scans pods. Over random histories of pods (one field changed per version,
what the rule reads or not) and random reservations in the ledger, the loads the webhook counts
from the view for every version must equal
:func:`~spreadbus.features.workloadspread.core.occupancy.loads_from_pods` over the pods the view
holds at the end, for a WorkloadSpread whose spec may lack some of the subsets the pods and the
reservations name.
"""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from spreadbus.features.workloadspread.admission.reservation_tally import ReservationTally
from spreadbus.features.workloadspread.admission.view import View
from spreadbus.features.workloadspread.core.model import from_object
from spreadbus.features.workloadspread.core.occupancy import Reservation, loads_from_pods
from spreadbus.features.workloadspread.core.reservation_contract import Ledger
from tests.workloadspread.core.pod_histories import NAMES, SUBSETS, History, histories
from tests.workloadspread.webhook.cluster_state import fold_pods

NOW = datetime(2026, 1, 1, tzinfo=UTC)
VERSIONS = ("v1", "v2", "7f", "versionIgnored")
"""Every version the histories' pods can have (``7f`` from a controller-revision-hash)."""
ALL_SUBSETS = (*SUBSETS, "zone-c")

reservations = st.lists(
    st.builds(
        Reservation,
        st.sampled_from(("default/ws", "default/ws", "default/other")),
        st.sampled_from(VERSIONS),
        st.sampled_from(ALL_SUBSETS),
        st.sampled_from((*NAMES, *(f"r-{name}" for name in NAMES), "uid-x")),
        st.sampled_from(("creating", "deleting")),
        st.just(NOW),
    ),
    max_size=10,
)
specs = st.lists(st.sampled_from(ALL_SUBSETS), min_size=1, unique=True)


@settings(max_examples=300, deadline=None)
@given(histories(), reservations, specs)
def test_the_view_counts_every_version_as_a_recount_of_its_pods_does(
    history: History, reserved: list[Reservation], subsets: list[str]
) -> None:
    view = View(cluster="c1")
    fold_pods(view, history)
    ws = from_object({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
        "metadata": {"name": "ws", "namespace": "default"},
        "spec": {"subsets": [{"name": name, "maxReplicas": 2} for name in subsets]},
    })
    ledger = Ledger()
    for reservation in reserved:
        ledger = ledger.with_reservation(reservation)
    pods = list(view.objects.get(("", "pods"), {}).values())
    recount = loads_from_pods(ws, pods, ledger.reservations())
    tally = ReservationTally(view)
    assert set(recount) <= set(VERSIONS)
    for version in VERSIONS:
        assert tally.loads(ws, version, ledger) == recount.get(version, {}), version
