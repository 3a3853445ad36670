"""Watcher settings (flags and SPREADBUS_* variables, see :mod:`spreadbus.runtime.settings`).

The resources to watch are, unless ``--resources`` names them, those the registered features
declare (:func:`spreadbus.engine.feature_set.watched_resources`): every kind a feature reads is
observed. What a feature's settings add (WorkloadSpread's custom workloads, named by
``--workload-whitelist``, the same JSON the webhook and the planner take) is added to
``resources`` even when ``--resources`` is given: without them their pods could not be steered.
A resource the cluster does not serve (a CRD not installed) is tolerated by the watch loop.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from pydantic import field_validator, model_validator
from pydantic_core import PydanticCustomError

from spreadbus.engine.feature import Feature
from spreadbus.engine.feature_service_settings import FeatureServiceSettings
from spreadbus.engine.feature_set import watched_resources
from spreadbus.features.registry import BUILTIN
from spreadbus.runtime.settings import CommaList


class WatcherSettings(FeatureServiceSettings):
    """The watcher's own settings, on top of the shared ones."""

    service: ClassVar[str] = "watcher"
    builtin: ClassVar[tuple[Feature[Any], ...]] = BUILTIN

    resources: CommaList = ()
    """[group/]version/resource to list and watch; empty: what the features read."""
    max_in_flight: int = 2000
    """Unacknowledged publishes before reading from Kubernetes pauses (back-pressure)."""
    watch_timeout_seconds: int = 300
    """Longest a watch request stays open before it is made again from where it was."""
    list_page_size: int = 500
    """Objects asked for per page of a list."""
    modified_hold_seconds: float = 0.1
    """How long an object's MODIFIED observation may wait for a newer one to replace it before
    it is published (0: publish every one); see services.watcher.modified_hold."""
    heartbeat_seconds: float = 10.0
    """How often this cluster's heartbeat (its API server's health and version) is put on the
    bus for the cluster registry (Karmada's ``--cluster-status-update-frequency``)."""
    host_kubeconfig: str = ""
    """Kubeconfig of the host's API server: given, the watcher registers its cluster there as a
    Cluster object on its first connection (pull mode); empty: no registration."""
    host_kube_context: str = ""
    """Context of ``--host-kubeconfig`` to use; empty: its current context."""

    @field_validator("heartbeat_seconds")
    @classmethod
    def _heartbeat_positive(cls, seconds: float) -> float:
        if not seconds > 0:
            raise PydanticCustomError("heartbeat", "must be > 0, not {seconds}",
                                      {"seconds": seconds})
        return seconds

    @field_validator("modified_hold_seconds")
    @classmethod
    def _hold_not_negative(cls, seconds: float) -> float:
        if not seconds >= 0:
            raise PydanticCustomError("hold", "must be >= 0, not {seconds}",
                                      {"seconds": seconds})
        return seconds

    def kinds(self) -> dict[str, str]:
        """Resource -> kind of the custom resources the features bring."""
        return {resource: kind for f in self.features() for resource, kind in f.kinds.items()}

    def status_history(self) -> tuple[tuple[str, str], ...]:
        """(group, resource) of the objects whose status transitions are recorded."""
        return tuple(dict.fromkeys(r for f in self.features() for r in f.status_history))

    @model_validator(mode="after")
    def _resources_of_the_features(self) -> Self:
        chosen = self.features()
        named = self.resources or watched_resources(chosen)
        added = (r for f in chosen for r in self.settings_of(f).watches())
        # Derived once, as the settings are made; they are frozen for everyone else.
        object.__setattr__(self, "resources", tuple(dict.fromkeys((*named, *added))))
        return self
