"""WorkloadSpread conversion between ``v1alpha1`` and ``v1beta1`` (CRD conversion webhook).

The two versions differ in two subset field names (``requiredNodeSelectorTerm`` /
``requiredNodeSelector``, ``preferredNodeSelectorTerms`` / ``preferredNodeSelector``) and in
the subset condition type: ``v1beta1`` uses ``metav1.Condition``, whose ``reason`` is required,
so an empty reason becomes ``"Unknown"`` on the way up (as Kruise's conversion does) and stays
``"Unknown"`` on the way back. Everything else is carried over untouched (``targetFilter``,
``minReplicas``, ``versionedSubsetStatuses``, unknown fields), so a round trip is lossless, which
matters because the API server converts every read of the non-storage version.

Without this webhook a real API server converts by rewriting ``apiVersion`` only, and the
renamed fields of one version would be pruned by the other version's schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from spreadbus.engine.conversion_review import ConversionRefused

GROUP: Final = "apps.kruise.io"
ALPHA: Final = f"{GROUP}/v1alpha1"
BETA: Final = f"{GROUP}/v1beta1"
RENAMES: Final = (
    ("requiredNodeSelectorTerm", "requiredNodeSelector"),
    ("preferredNodeSelectorTerms", "preferredNodeSelector"),
)


class ConversionError(ConversionRefused):
    """An object this webhook cannot convert; the message names it."""


def convert(obj: Mapping[str, Any], desired: str) -> dict[str, Any]:
    """``obj`` as ``desired``; raises :class:`ConversionError` for what it cannot convert."""
    source = obj.get("apiVersion")
    if obj.get("kind") != "WorkloadSpread":
        raise ConversionError(f"cannot convert kind {obj.get('kind')!r}")
    if source not in (ALPHA, BETA):
        raise ConversionError(f"cannot convert from {source!r}")
    if desired not in (ALPHA, BETA):
        raise ConversionError(f"cannot convert to {desired!r}")
    # Copy-on-write: only the containers a rename or a reason touches are copied, so a
    # conversion costs the subsets and conditions, not the whole object; ``obj`` is never changed.
    out = dict(obj)
    out["apiVersion"] = desired
    if source == desired:
        return out
    pairs = RENAMES if desired == BETA else tuple((b, a) for a, b in RENAMES)
    spec = out.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("subsets"), list):
        out["spec"] = {**spec, "subsets": [_renamed(s, pairs) for s in spec["subsets"]]}
    if desired == BETA and isinstance(out.get("status"), dict):
        out["status"] = _with_reasons(out["status"])
    return out


def _renamed(subset: object, pairs: tuple[tuple[str, str], ...]) -> object:
    if not isinstance(subset, dict) or not any(old in subset for old, _ in pairs):
        return subset
    renamed = dict(subset)
    for old, new in pairs:
        if old in renamed:
            renamed[new] = renamed.pop(old)
    return renamed


def _with_reasons(status: dict[str, Any]) -> dict[str, Any]:
    """``status`` whose subset conditions all carry a reason (``metav1.Condition`` needs one)."""
    out = dict(status)
    if isinstance(status.get("subsetStatuses"), list):
        out["subsetStatuses"] = _subsets_with_reasons(status["subsetStatuses"])
    versioned = status.get("versionedSubsetStatuses")
    if isinstance(versioned, dict):
        out["versionedSubsetStatuses"] = {
            version: _subsets_with_reasons(subsets) if isinstance(subsets, list) else subsets
            for version, subsets in versioned.items()
        }
    return out


def _subsets_with_reasons(subsets: list[Any]) -> list[Any]:
    out = []
    for subset in subsets:
        conditions = subset.get("conditions") if isinstance(subset, dict) else None
        if isinstance(conditions, list) and any(
            isinstance(c, dict) and not c.get("reason") for c in conditions
        ):
            subset = {
                **subset,
                "conditions": [
                    {**c, "reason": "Unknown"} if isinstance(c, dict) and not c.get("reason") else c
                    for c in conditions
                ],
            }
        out.append(subset)
    return out
