"""The webhook's spending, folded from the budget bucket's own stream for the planner.

Every admission the webhook let through is in the bucket before its answer
(:mod:`spreadbus.features.podunavailablebudget.core.budget_ledger`); the planner writes those
records into the next status, so that status counts the pods as disrupted, and a webhook replica
that later sees that status stops counting them itself. The bucket keeps one revision per key, so
its stream replays in one message per budget on every start.
"""

from __future__ import annotations

from typing import Final

from events.reservations import key_tokens
from spreadbus.features.podunavailablebudget.core.budget_ledger import (
    BudgetEntry,
    decode,
    subject_prefix,
)

BUDGETS_RESOURCE: Final = "$budgets"
"""``changed`` carries ``(BUDGETS_RESOURCE, <namespace>.<name>)`` when an entry changes."""


class BudgetRecords:
    def __init__(self, cluster: str) -> None:
        self._prefix = subject_prefix(cluster)
        self.last_seq = 0
        self._entries: dict[str, BudgetEntry] = {}

    def apply(self, seq: int, subject: str, data: bytes) -> str | None:
        """Fold one message; the budget's object key (escaped ``namespace.name``) it changed."""
        if seq <= self.last_seq:
            return None
        self.last_seq = seq
        if not subject.startswith(self._prefix):
            return None
        key = key_tokens(subject[len(self._prefix):])
        if key.count(".") != 1:
            return None
        entry = decode(data)
        if entry.spent:
            self._entries[key] = entry
        else:
            self._entries.pop(key, None)
        return key

    def entry(self, budget_key: str) -> BudgetEntry:
        return self._entries.get(budget_key) or BudgetEntry()
