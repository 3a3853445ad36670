"""PodUnavailableBudget's part of the audit log: ``why podunavailablebudget NS/NAME`` tells a
budget's status transitions (its status lists no subsets)."""

from __future__ import annotations

from typing import Final

from spreadbus.audit.hook import FeatureAudit, Governing
from spreadbus.features.podunavailablebudget.core.model import NAME

AUDIT: Final = FeatureAudit(governing={NAME: Governing(resource="podunavailablebudgets")})
