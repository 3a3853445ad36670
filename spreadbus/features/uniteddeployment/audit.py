"""UnitedDeployment's part of the audit log: the counts of its subsets, and
``why uniteddeployment``."""

from __future__ import annotations

from typing import Final

from spreadbus.audit.fold import subset_counts
from spreadbus.audit.hook import FeatureAudit, Governing
from spreadbus.features.uniteddeployment.core.model import NAME

AUDIT: Final = FeatureAudit(
    subset_counts=subset_counts,
    governing={NAME: Governing(resource="uniteddeployments")},
)
