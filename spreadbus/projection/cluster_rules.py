"""One rule over the objects of every cluster, each of its plans naming the cluster it targets.

The projection keys every object by its cluster first (``<cluster>.<group>.<resource>``), so the
objects of two clusters never share a key. A feature's rule is written for one cluster's objects
(its indexes, its owner chains and its tallies hold one cluster's keys); :class:`EveryCluster`
runs one of it per cluster the projection holds and hands each only the changed keys of its own
cluster, so an owner in one cluster never meets a pod of another and a plan decided for one
cluster names that cluster (``Desired.cluster``), unless the rule named another itself (a rule
that reads other clusters' rules to decide for objects there).

The planner's own cluster (``home``) is decided as before: its rule exists from the start and is
held back by the planner until its resources are listed. Another cluster's rule is made when that
cluster's resources are first listed completely and is then offered every object of its
cluster; while one of its resources is relisted (its sync marker incomplete) its changes are kept
and offered once the list is complete again. A feature's side stream names its cluster first too
(:func:`~spreadbus.projection.kube_state.side_resource_key`); a changed key that names no cluster
of the projection goes to the home cluster's rule.
"""

from __future__ import annotations

from collections.abc import Callable, Set
from typing import TYPE_CHECKING

import msgspec

from events.messages import ResourceRef
from events.subjects import escape, unescape
from spreadbus.projection.kube_state import KubeProjection
from spreadbus.projection.planning import Desired, ReadsPlans, Rule, Timed

if TYPE_CHECKING:
    from spreadbus.projection.decision_log import DecisionLog

Key = tuple[str, str]


class EveryCluster:
    """``make(cluster)`` builds the feature's rule for one cluster (``home`` at once)."""

    def __init__(self, make: Callable[[str], Rule], *, home: str) -> None:
        self._make = make
        self.home = home
        first = make(home)
        self.name: str = first.name
        self.resources: tuple[ResourceRef, ...] = first.resources
        self._rules: dict[str, Rule] = {escape(home): first}
        # A runtime protocol check walks the protocol's attributes: done once per rule made.
        self._timed: list[Timed] = [first] if isinstance(first, Timed) else []
        self._reading: list[ReadsPlans] = [first] if isinstance(first, ReadsPlans) else []
        self._held: dict[str, set[Key]] = {}
        """Escaped cluster -> changed keys kept while one of its resources is relisted."""
        self._log: DecisionLog | None = None
        self._view: KubeProjection | None = None
        """The projection the last round read: :meth:`due` asks it which held clusters are
        listed by now, whose keys no change may ever offer again."""

    def rule_of(self, cluster: str) -> Rule | None:
        """The rule deciding for ``cluster``, once made."""
        return self._rules.get(escape(cluster))

    def desired(self, view: KubeProjection, changed: Set[Key], now: float) -> list[Desired]:
        self._view = view
        home = escape(self.home)
        clusters = view.clusters()
        if not self._held and clusters <= {home} and len(self._rules) == 1:
            # One cluster, the planner's own: its rule reads the keys as they are.
            return [msgspec.structs.replace(want, cluster=want.cluster or self.home)
                    for want in self._rules[home].desired(view, changed, now)]
        split: dict[str, set[Key]] = {}
        for key in changed:
            cluster = key[0].partition(".")[0]
            split.setdefault(cluster if cluster in clusters else home, set()).add(key)
        for cluster in clusters - self._rules.keys():
            if cluster not in split and self._ready(view, cluster):
                split[cluster] = set()  # listed meanwhile: offered all it holds below
        out: list[Desired] = []
        for cluster in sorted(split):
            keys = split[cluster]
            rule = self._rules.get(cluster)
            if cluster != home:
                if not self._ready(view, cluster):
                    self._held.setdefault(cluster, set()).update(keys)
                    continue
                keys |= self._held.pop(cluster, set())
                if rule is None:
                    rule = self._rules[cluster] = self._made(cluster)
                    keys |= {k for k in view.all_keys() if k[0].partition(".")[0] == cluster}
            assert rule is not None
            name = unescape(cluster)
            out.extend(msgspec.structs.replace(want, cluster=want.cluster or name)
                       for want in rule.desired(view, keys, now))
        return out

    def _ready(self, view: KubeProjection, cluster: str) -> bool:
        name = unescape(cluster)
        return all(view.synced(name, ref.group, ref.resource) for ref in self.resources)

    def _made(self, cluster: str) -> Rule:
        rule = self._make(unescape(cluster))
        if isinstance(rule, Timed):
            self._timed.append(rule)
        if isinstance(rule, ReadsPlans):
            self._reading.append(rule)
            if self._log is not None:
                rule.read_plans(self._log)
        return rule

    # -- what the planner asks of timed rules and of rules that read their plans ---------------

    def due(self, now: float) -> set[Key]:
        due: set[Key] = set()
        view = self._view
        if view is not None:
            # A cluster listed since its keys were held: a sync marker changes no key.
            for cluster, keys in self._held.items():
                if self._ready(view, cluster):
                    due |= keys
        for rule in self._timed:
            due |= rule.due(now)
        return due

    def next_wake(self) -> float | None:
        wakes = [w for rule in self._timed if (w := rule.next_wake()) is not None]
        return min(wakes) if wakes else None

    def read_plans(self, log: DecisionLog) -> None:
        self._log = log
        for rule in self._reading:
            rule.read_plans(log)
