"""The webhook's spending, folded from the budget bucket's own stream for the planner.

Every admission the webhook let through is in the bucket before its answer
(:mod:`spreadbus.features.podunavailablebudget.core.budget_ledger`); the planner writes those
records into the next status, so that status counts the pods as disrupted, and a webhook replica
that later sees that status stops counting them itself. The bucket keeps one revision per key, so
its stream replays in one message per budget on every start
(:class:`~spreadbus.projection.bucket_entries.BucketFold`). The fold keeps every cluster's
records; each cluster's rule reads its own (``BudgetRecords().of(cluster).get(budget_key)``).
"""

from __future__ import annotations

from typing import Final

from spreadbus.features.podunavailablebudget.core.budget_ledger import (
    BUCKET,
    ENTRIES,
    BudgetEntry,
)
from spreadbus.projection.bucket_entries import BucketFold

BUDGETS_RESOURCE: Final = "$budgets"
"""``changed`` carries ``(side_resource_key(cluster, BUDGETS_RESOURCE), <namespace>.<name>)``
when an entry of ``cluster`` changes."""


def _spends(entry: BudgetEntry) -> bool:
    return entry.spent > 0


class BudgetRecords(BucketFold[BudgetEntry]):
    """Each cluster's live records by budget key (escaped ``namespace.name``)."""

    def __init__(self) -> None:
        super().__init__(BUCKET, ENTRIES, live=_spends)
