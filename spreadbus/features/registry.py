"""The features this build runs, in registry order; adding a capability is one line here.

Order matters where features share an admission path: their handlers run, and their patches
compose, in this order (:mod:`spreadbus.engine.admission_chain`). A deployment adds features of
its own as plugins (:mod:`spreadbus.engine.feature_plugins`), which run after these.

This module is the one door to the features: the services (through their settings' ``builtin``)
and the audit log (:mod:`spreadbus.audit.registered`) import it and no other module of
``spreadbus.features`` (an import-linter contract holds it). They read the list here rather than
from an entry point because a build's features are a fact of its source, not of what else is
installed; plugins are named explicitly, by ``--feature-plugins``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from spreadbus.engine.feature import Feature
from spreadbus.engine.feature_plugins import PluginError, with_plugins
from spreadbus.features.clusters.feature import FEATURE as CLUSTERS
from spreadbus.features.podunavailablebudget.feature import FEATURE as PODUNAVAILABLEBUDGET
from spreadbus.features.propagation.feature import FEATURE as PROPAGATION
from spreadbus.features.uniteddeployment.feature import FEATURE as UNITEDDEPLOYMENT
from spreadbus.features.workloadrebalancer.feature import FEATURE as WORKLOADREBALANCER
from spreadbus.features.workloadspread.feature import FEATURE as WORKLOADSPREAD

__all__ = ["BUILTIN", "PluginError", "features"]

BUILTIN: Final[tuple[Feature[Any], ...]] = (
    WORKLOADSPREAD,
    UNITEDDEPLOYMENT,
    PODUNAVAILABLEBUDGET,
    WORKLOADREBALANCER,
    PROPAGATION,
    CLUSTERS,
)


def features(plugins: Sequence[str] = ()) -> tuple[Feature[Any], ...]:
    """The built-in features and the plugins, in that order; names must be unique."""
    return with_plugins(BUILTIN, plugins)
