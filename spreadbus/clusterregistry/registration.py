"""The Cluster object a member registers in the host, as karmada-agent registers in pull mode.

Registration only creates the object, named for the member: its status and taints are the
control plane's to keep, from the member's heartbeats. A Cluster already there is the member's
own registration from an earlier start (or ``spreadbus join``) and is left as it is.
"""

from __future__ import annotations

from typing import Any

from spreadbus.clusterregistry.registry import KARMADA_CLUSTER

PULL: str = "Pull"


def cluster_object(member: str, *, sync_mode: str = PULL) -> dict[str, Any]:
    """A new Cluster for ``member``: no status, no taints (the control plane adds them)."""
    return {"apiVersion": KARMADA_CLUSTER.api_version, "kind": KARMADA_CLUSTER.kind,
            "metadata": {"name": member}, "spec": {"syncMode": sync_mode}}


def clusters_path() -> str:
    """The host API path Cluster objects are created at."""
    return f"/apis/{KARMADA_CLUSTER.api_version}/{KARMADA_CLUSTER.plural}"
