"""A feature's part of the audit log: what it adds to the shared tables, and what ``why`` tells.

The audit's own tables hold what every feature shares: admissions and the subsets each saw,
pods' lifecycle points, plans and outcomes, governing objects' status transitions and their
subsets' counts. What only a feature knows comes from its :class:`FeatureAudit`: the columns it
adds to ``pods`` and how a pod's ``created`` point fills them (its placement annotation), how
its status lists its subsets, the kinds ``spreadbus why`` explains, the lines it tells of a pod it
governs, and the canned queries and pages ``audit serve`` shows. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from events.messages import PodLifecycle


class SubsetCount(NamedTuple):
    """One subset's counts in a governing object's status."""

    subset: str
    replicas: int | None
    missing_replicas: int | None
    ready_replicas: int | None


@dataclass(frozen=True, kw_only=True)
class Governing:
    """A kind ``spreadbus why KIND NS/NAME`` explains: the resource of its status changes, and
    the ``pods`` column naming the object that placed a pod (its pods alive are counted by
    subset), if it places pods."""

    resource: str
    pods_column: str | None = None


@dataclass(frozen=True, kw_only=True)
class FeatureAudit:
    pod_columns: Sequence[str] = ()
    """Text columns it adds to ``pods``, after the pod's owner."""
    pod_indexes: Sequence[tuple[str, ...]] = ()
    pod_created: Callable[[PodLifecycle], Mapping[str, Any]] | None = None
    """A pod's columns from its ``created`` point: its own ``pod_columns``, and the shared
    ``subset`` and ``admission_key`` (``admissions.pod_key`` of the admission that placed it)."""
    subset_counts: Callable[[Mapping[str, Any]], Sequence[SubsetCount]] | None = None
    """Each subset's counts in the status of an object of its ``status_history``."""
    governing: Mapping[str, Governing] = field(default_factory=dict)
    """``why`` kind (``workloadspread``) -> what it reads of it."""
    admitted_by: Callable[[Mapping[str, Any]], tuple[str, str | None] | None] | None = None
    """The workload (``admissions.workload``) and subset a ``pods`` row was admitted for, when a
    feature of its admission placed it (``why`` then looks for that admission, or says it is out
    of the log's window)."""
    pod_lines: Callable[[Mapping[str, Any]], Sequence[str]] | None = None
    """What ``why pod`` tells of a pod it governs, after its workload."""
    queries: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Canned queries of ``audit serve`` (Datasette's ``queries`` entries), after the shared."""
    pages: Mapping[str, str] = field(default_factory=dict)
    """``audit serve`` pages: path -> HTML."""
