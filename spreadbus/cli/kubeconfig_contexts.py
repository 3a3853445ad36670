"""One kubeconfig for a stack of several clusters: a context per cluster, named for it.

Each kubesim writes a kubeconfig of its own whose cluster, user and context are all called
``kubesim``; a person wants one file in which ``kubectl --context member1`` reaches member1 and
the host's context is the current one. Pure: kubeconfigs in, a kubeconfig out.

Signature::

    merged_kubeconfig(contexts: Mapping[str, Mapping[str, Any]], current: str) -> dict[str, Any]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def merged_kubeconfig(contexts: Mapping[str, Mapping[str, Any]], current: str) -> dict[str, Any]:
    """Context name -> that cluster's own kubeconfig (its current context is the one taken), as
    one kubeconfig whose cluster, user and context of each are named by the context name."""
    if current not in contexts:
        raise ValueError(f"current context {current!r} is none of {', '.join(contexts)}")
    clusters, users, named = [], [], []
    for name, config in contexts.items():
        context = _current_context(config)
        cluster = _entry(config, "clusters", context["cluster"])
        user = _entry(config, "users", context["user"])
        clusters.append({"name": name, "cluster": dict(cluster)})
        users.append({"name": name, "user": dict(user)})
        named.append({"name": name, "context": {**context, "cluster": name, "user": name}})
    return {"apiVersion": "v1", "kind": "Config", "clusters": clusters, "users": users,
            "contexts": named, "current-context": current, "preferences": {}}


def _current_context(config: Mapping[str, Any]) -> dict[str, Any]:
    return dict(_entry(config, "contexts", config.get("current-context")))


def _entry(config: Mapping[str, Any], section: str, name: object) -> Mapping[str, Any]:
    """The body of the entry ``name`` of ``section`` (``clusters``, ``users``, ``contexts``)."""
    for item in config.get(section) or []:
        if isinstance(item, Mapping) and item.get("name") == name:
            body = item.get(section[:-1])
            if isinstance(body, Mapping):
                return body
    raise ValueError(f"kubeconfig: no {section[:-1]} named {name!r}")
