"""PodUnavailableBudget's settings, and which services read each.

The two gates are Kruise's ``PodUnavailableBudgetDeleteGate`` and
``PodUnavailableBudgetUpdateGate``: the first protects pod deletion and eviction, the second
in-place updates that make a pod unavailable. Kruise turns the update gate off by default;
spreadbus turns both on, since the operations a budget protects are already chosen per budget
(``kruise.io/pub-protect-operations``).
"""

from __future__ import annotations

from typing import Annotated

from spreadbus.engine.feature_settings import FeatureSettings, UsedBy


class PodUnavailableBudgetSettings(FeatureSettings):
    pub_delete_gate: Annotated[bool, UsedBy("webhook")] = True
    """Budgets protect pod DELETE and eviction (Kruise's PodUnavailableBudgetDeleteGate)."""
    pub_update_gate: Annotated[bool, UsedBy("webhook")] = True
    """Budgets protect pod updates that make a pod unavailable (Kruise's
    PodUnavailableBudgetUpdateGate)."""
    pub_ledger_deadline_seconds: Annotated[float, UsedBy("webhook")] = 2.0
    """How long one admission keeps retrying a contended budget entry before it refuses."""
    pub_min_interval_seconds: Annotated[float, UsedBy("planner")] = 0.02
    """Plan one budget's status at most this often; changes in between are taken together. A
    throttled drain or rollout moves at the pace of the status, so this is short: one status
    write is in flight at a time anyway."""
