"""The names of the propagation feature and of the Karmada API groups it reads."""

from __future__ import annotations

from typing import Final

from kubesemantics.karmada_binding import POLICY_GROUP, WORK_GROUP
from spreadbus.features.propagation.core.cluster import GROUP as CLUSTER_GROUP

__all__ = ["CLUSTER_GROUP", "NAME", "POLICY_GROUP", "WORK_GROUP"]

NAME: Final = "propagation"
"""The name the feature registers under."""
