"""The planner counts a WorkloadSpread's pods by its ``targetFilter`` only when the filter has a
selector, read against the pod's string labels; the webhook's rule differs only for a filter
without a selector, which selects no pod to it and every pod to the planner (as in Kruise)."""

from __future__ import annotations

from typing import Any

import pytest

from spreadbus.features.workloadspread.core.model import TargetFilter
from spreadbus.features.workloadspread.core.pod_state import pod_labels
from spreadbus.features.workloadspread.core.target import pod_counted_by_planner, pod_selected
from tests.workloadspread.core.builders import pod

FRONT = {"matchLabels": {"tier": "front"}}
BROKEN = {"matchLabels": {"tier": ["not a label value"]}}


@pytest.mark.parametrize(
    ("target_filter", "labels", "planner", "webhook"),
    [
        (None, {"tier": "back"}, True, True),
        (TargetFilter(), {"tier": "back"}, True, False),
        (TargetFilter(selector={}), {"tier": "back"}, True, True),
        (TargetFilter(selector=FRONT), {"tier": "front"}, True, True),
        (TargetFilter(selector=FRONT), {"tier": "back"}, False, False),
        (TargetFilter(selector=FRONT), {"tier": 1}, False, False),
        (TargetFilter(selector=BROKEN), {"tier": "front"}, False, False),
    ],
)
def test_a_pod_is_counted_when_the_filter_selects_it(
    target_filter: TargetFilter | None, labels: dict[str, Any], planner: bool, webhook: bool
) -> None:
    counted = pod("web-1", labels=labels)
    assert pod_counted_by_planner(target_filter, counted) is planner
    assert pod_selected(target_filter, pod_labels(counted)) is webhook
