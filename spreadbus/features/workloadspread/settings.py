"""WorkloadSpread's settings, and which services read each.

The whitelist is checked where it is loaded: one that cannot be used is a bad setting naming every
problem in it (the service exits 2), never a traceback once the service has started. The watcher,
the planner and the webhook take the same whitelist: the watcher streams its kinds, the planner
counts their replicas, the webhook steers their pods. The planner also keeps rebalancing within
``rebalance_max_unavailable``.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

from spreadbus.engine.feature_settings import FeatureSettings, UsedBy
from spreadbus.features.workloadspread.core.custom_workloads import (
    Whitelist,
    WhitelistError,
    parse_whitelist,
)
from spreadbus.features.workloadspread.core.rebalance import DEFAULT_MAX_UNAVAILABLE
from spreadbus.features.workloadspread.core.reschedule import RECOVER_AFTER
from spreadbus.features.workloadspread.core.workload_kinds import workload_kinds


def int_or_percent(text: str) -> str:
    """A non-negative integer or ``N%``, as a Kubernetes IntOrString maxUnavailable."""
    number = text[:-1] if text.endswith("%") else text
    if not number.isdigit():
        raise PydanticCustomError("int_or_percent",
                                  "not an integer or a percentage: {value!r}", {"value": text})
    return text


def usable_whitelist(text: str) -> str:
    try:
        parse_whitelist(text or None)
    except WhitelistError as exc:
        raise PydanticCustomError("whitelist", "not a valid whitelist: {problems}",
                                  {"problems": "; ".join(exc.problems)}) from exc
    return text


class WorkloadSpreadSettings(FeatureSettings):
    workload_whitelist: Annotated[
        str, AfterValidator(usable_whitelist), UsedBy("watcher", "planner", "webhook")
    ] = ""
    """Custom workloads, as Kruise's WorkloadSpread_Watch_Custom_Workload_WhiteList JSON; give
    the watcher, the planner and the webhook the same one."""
    adaptive_recover_seconds: Annotated[float, UsedBy("planner")] = (
        RECOVER_AFTER.total_seconds()
    )
    """How long an Adaptive subset stays Schedulable=False before it may turn True again
    (Kruise: 300 s)."""
    workloadspread_min_interval_seconds: Annotated[float, UsedBy("planner")] = 0.25
    """Plan one WorkloadSpread at most this often; changes in between are taken together."""
    rebalance_max_unavailable: Annotated[
        str, AfterValidator(int_or_percent), UsedBy("planner")
    ] = DEFAULT_MAX_UNAVAILABLE
    """While a rebalance moves a workload's pods, at most this many of its replicas unavailable
    at once (an integer or a percentage of the replicas, rounded down; never less than 1)."""
    repair_unsteered_pods: Annotated[bool, UsedBy("planner")] = True
    """Move pods admitted while no webhook steered them (the pod webhook fails open) to where
    the webhook would have put them, within the same limits as a rebalance
    (``--repair-unsteered-pods=false`` leaves them where they landed)."""
    ledger_deadline_seconds: Annotated[float, UsedBy("webhook")] = 2.0
    """How long one admission keeps retrying a contended reservation."""

    def max_unavailable(self) -> int | str:
        text = self.rebalance_max_unavailable
        return text if text.endswith("%") else int(text)

    def whitelist(self) -> Whitelist:
        return parse_whitelist(self.workload_whitelist or None)

    def watches(self) -> tuple[str, ...]:
        """The whitelisted custom kinds: without their objects their pods cannot be steered."""
        return tuple(k.spec for k in workload_kinds(self.whitelist()) if k.custom)
