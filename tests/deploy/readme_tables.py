"""deploy/README.md's tables of CRDs, roles and webhooks, written from what kustomize renders.

The README holds each table between ``<!-- rendered: NAME -->`` and ``<!-- end rendered -->``;
``test_readme_tables_match_the_rendering`` fails when one differs from the rendered objects, and
``python -m tests.deploy.readme_tables`` rewrites them. A webhook without a reason in
``WEBHOOK_REASONS`` is an error: every failure policy is explained.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "deploy" / "README.md"
KUBECTL = Path(sys.executable).parent / "kubectl"
JSON = Mapping[str, Any]

WEBHOOK_REASONS = {
    "mpod.spreadbus.io": "a pod admitted without a subset is still a valid pod; an unavailable "
    "webhook must never block every pod in the cluster",
    "vpod.spreadbus.io": "an unreachable webhook never blocks every deletion, eviction or update "
    "in the cluster; a webhook that answers but cannot spend the budget refuses "
    "(docs/podunavailablebudget.md)",
    "muniteddeployment.spreadbus.io": "a UnitedDeployment is stored with its defaults or not "
    "at all",
    "vuniteddeployment.spreadbus.io": "an unchecked UnitedDeployment is never stored, and a "
    "protected one never deleted",
    "vworkloadspread.spreadbus.io": "an unchecked spread is never stored",
    "vworkloadrebalancer.spreadbus.io": "an unchecked rebalancer is never stored",
    "vpodunavailablebudget.spreadbus.io": "an unchecked budget is never stored",
}


def render() -> list[JSON]:
    """``kubectl kustomize deploy/``'s objects."""
    out = subprocess.run(
        [str(KUBECTL), "kustomize", str(ROOT / "deploy")],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def _table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _code(words: Iterable[str]) -> str:
    return ", ".join(f"`{w}`" for w in words)


def crd_table(objects: Iterable[JSON]) -> str:
    rows = []
    for crd in objects:
        if crd["kind"] != "CustomResourceDefinition":
            continue
        spec = crd["spec"]
        versions = [
            v["name"] + (" (stored)" if v.get("storage") else "")
            for v in spec["versions"] if v.get("served", True)
        ]
        subresources = sorted({s for v in spec["versions"] for s in v.get("subresources") or {}})
        conversion = (spec.get("conversion") or {}).get("strategy", "None")
        rows.append((spec["names"]["kind"], spec["group"], ", ".join(versions), spec["scope"],
                     ", ".join(subresources) or "none", conversion))
    return _table(("kind", "group", "versions", "scope", "subresources", "conversion"),
                  sorted(rows))


def rbac_table(objects: Iterable[JSON]) -> str:
    """One row per rule of each (Cluster)Role, named by the service account bound to it."""
    listed = list(objects)
    bound: dict[tuple[str, str], list[str]] = {}
    for binding in listed:
        if binding["kind"] in ("ClusterRoleBinding", "RoleBinding"):
            ref = binding["roleRef"]
            role_kind = ref["kind"]
            for subject in binding.get("subjects") or []:
                if subject["kind"] == "ServiceAccount":
                    bound.setdefault((role_kind, ref["name"]), []).append(subject["name"])
    rows = []
    for role in listed:
        if role["kind"] not in ("ClusterRole", "Role"):
            continue
        accounts = ", ".join(f"`{a}`" for a in sorted(bound.get((role["kind"],
                                                                   role["metadata"]["name"]), [])))
        scope = ("cluster" if role["kind"] == "ClusterRole"
                 else f"namespace `{role['metadata'].get('namespace')}`")
        for rule in role.get("rules") or []:
            groups = ", ".join(f"`{g}`" if g else "core" for g in rule.get("apiGroups") or [])
            rows.append((accounts or "(unbound)", scope, groups, _code(rule.get("resources") or []),
                         _code(rule.get("verbs") or [])))
    return _table(("service account", "scope", "API group", "resources", "verbs"), rows)


def webhook_table(objects: Iterable[JSON]) -> str:
    rows = []
    for config in objects:
        if config["kind"] not in ("MutatingWebhookConfiguration",
                                  "ValidatingWebhookConfiguration"):
            continue
        for hook in config["webhooks"]:
            name = hook["name"]
            if name not in WEBHOOK_REASONS:
                raise KeyError(f"webhook {name} renders with no reason in WEBHOOK_REASONS")
            path = (hook["clientConfig"].get("service") or {}).get("path", "")
            rules = "; ".join(
                f"{'/'.join(rule['operations'])} {', '.join(rule['resources'])}"
                for rule in hook["rules"]
            )
            policy = f"{hook.get('failurePolicy', 'Fail')}, {hook.get('timeoutSeconds', 10)} s"
            rows.append((f"`{name}` (`{path}`)", rules, policy, WEBHOOK_REASONS[name]))
    return _table(("webhook", "requests", "failurePolicy, timeout", "why"), rows)


TABLES: dict[str, Callable[[Iterable[JSON]], str]] = {
    "crds": crd_table,
    "rbac": rbac_table,
    "failure-policies": webhook_table,
}
_BLOCK = re.compile(r"(<!-- rendered: (?P<name>[a-z-]+) -->\n)(?P<body>.*?)(<!-- end rendered -->)",
                    re.S)


def tables_in(text: str) -> dict[str, str]:
    """The README's tables by name, as written."""
    return {m["name"]: m["body"].removesuffix("\n") for m in _BLOCK.finditer(text)}


def rewritten(text: str, objects: list[JSON]) -> str:
    """``text`` with every rendered table replaced by the one the objects give."""
    def fill(match: re.Match[str]) -> str:
        return match[1] + TABLES[match["name"]](objects) + "\n" + match[4]

    return _BLOCK.sub(fill, text)


if __name__ == "__main__":
    README.write_text(rewritten(README.read_text(), render()))
