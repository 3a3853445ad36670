"""PodUnavailableBudget as a feature: what the watcher, planner, webhook and CLI run of it.

The pure rules live in :mod:`.core` (model, validation, status computation, admission
decision); :mod:`.offline` answers ``spreadbus validate``, ``plan`` and ``admit``.
"""

from __future__ import annotations

from typing import Final

from spreadbus.engine.feature import Feature
from spreadbus.features.podunavailablebudget.core.model import GROUP, KIND
from spreadbus.features.podunavailablebudget.offline import (
    offline_admit,
    offline_plan,
    validate_offline,
)

NAME: Final = "podunavailablebudget"

FEATURE: Final = Feature(
    name=NAME,
    validators={(GROUP, KIND): validate_offline},
    offline_admit=offline_admit,
    offline_plan=offline_plan,
)
