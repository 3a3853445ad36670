"""How deeply a JSON value nests, measured without recursion, and the limit spreadbus keeps.

Kubernetes decodes JSON nested up to 10,000 levels; Python's own recursion stops near 1,000, so
a rule that walks a value recursively (a strategic merge patch, a validation) would crash on a
value Kubernetes accepts. No Kubernetes object comes near either: spreadbus refuses values nested
deeper than :data:`MAX_DEPTH` with an error naming where, before any recursive rule sees them.
"""

from __future__ import annotations

from typing import Final

MAX_DEPTH: Final = 200
"""Objects and lists inside one another, the outermost counted; a pod template with a deep patch
is under 30."""


def too_deep(value: object, path: str = "", *, limit: int = MAX_DEPTH) -> str | None:
    """The path (``spec.subsets[0].patch.a.b...``, cut at the limit) of the first place where
    ``value`` nests deeper than ``limit``; ``None`` when it does not."""
    stack: list[tuple[object, str, int]] = [(value, path, 1)]
    while stack:
        current, where, depth = stack.pop()
        if isinstance(current, dict):
            children = [(v, f"{where}.{k}" if where else str(k)) for k, v in current.items()]
        elif isinstance(current, list):
            children = [(v, f"{where}[{i}]") for i, v in enumerate(current)]
        else:
            continue
        if depth > limit:
            return where
        stack.extend((child, child_path, depth + 1) for child, child_path in children)
    return None


def shorten(path: str, keep: int = 80) -> str:
    """A path short enough for a message: its start, then ``...``."""
    return path if len(path) <= keep else path[:keep] + "..."
