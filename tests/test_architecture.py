"""The architecture rules that import-linter cannot see: the core never reads a clock or
randomness, no module is a grab-bag named utils/helpers/common, and every feature package is
built alike."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import re
from pathlib import Path
from typing import Any, Final

import pytest

from spreadbus.engine.feature import Feature

ROOT = Path(__file__).resolve().parent.parent
FEATURES = ROOT / "spreadbus" / "features"
FEATURE_PACKAGES = sorted(p.name for p in FEATURES.iterdir() if (p / "__init__.py").exists())
PURE = [ROOT / "spreadbus" / "projection",
        *(FEATURES / name / part for name in FEATURE_PACKAGES for part in ("core", "planning"))]
CLOCK_OR_CHANCE = re.compile(
    r"\b(datetime\.now|datetime\.utcnow|date\.today|time\.time|time\.monotonic|"
    r"time\.perf_counter|uuid\.uuid[14]|import random|from random)\b"
)
PACKAGES = ["spreadbus", "events", "services", "kubesim"]


def _sources(dirs: list[Path]) -> list[Path]:
    return sorted(p for d in dirs if d.exists() for p in d.rglob("*.py"))


def test_pure_core_reads_no_clock_and_no_randomness() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in _sources(PURE)
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if CLOCK_OR_CHANCE.search(line)
    ]
    assert offenders == []


def test_the_pure_core_exists_and_is_checked() -> None:
    assert len(_sources(PURE)) > 5


def test_no_grab_bag_modules() -> None:
    grab_bags = [
        str(path.relative_to(ROOT))
        for path in _sources([ROOT / p for p in PACKAGES])
        if path.stem in {"utils", "util", "helpers", "common", "misc"}
        or path.parent.name in {"utils", "util", "helpers", "common", "misc"}
    ]
    assert grab_bags == []


ROLE_MODULES: Final = {"__init__", "feature", "offline"}
"""Every feature has these: the declaration and its offline commands."""
SIDE_MODULES: Final = {"planner": "planner", "webhook": "webhook"}
"""The module of each side a feature may run (``Feature.planner``, ``Feature.webhook``): there
exactly when the feature declares that side, so no module stands empty for a side not run."""
OPTIONAL_MODULES: Final = {"settings", "audit"}
"""A feature without settings has no settings module, one without a part of the audit log no
audit module."""
ROLE_PACKAGES: Final = {"core", "planning"}
"""Its pure rules and model, and its planning rules (a scheduling round the offline ``plan``
runs too, before a planner side runs it)."""
SIDE_PACKAGES: Final = {"webhook": "admission"}
"""The webhook side's handlers: there exactly when the feature declares a webhook side."""
DECLARATION: Final = (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.FunctionDef)
"""What ``feature.py`` may hold: imports, constants and the functions building its grants."""


def test_the_feature_packages_are_found() -> None:
    assert {"workloadspread", "uniteddeployment", "podunavailablebudget",
            "workloadrebalancer"} <= set(FEATURE_PACKAGES)


@pytest.mark.parametrize("name", FEATURE_PACKAGES)
def test_every_feature_has_the_same_files_for_the_same_roles(name: str) -> None:
    package = FEATURES / name
    feature = importlib.import_module(f"spreadbus.features.{name}.feature").FEATURE
    sides = {side for side in SIDE_MODULES if getattr(feature, side) is not None}
    modules = {p.stem for p in package.glob("*.py")}
    packages = {p.name for p in package.iterdir() if (p / "__init__.py").exists()}
    expected = ROLE_MODULES | {SIDE_MODULES[side] for side in sides}
    assert expected - modules == set()
    assert modules - expected - OPTIONAL_MODULES == set()
    assert packages == ROLE_PACKAGES | {SIDE_PACKAGES[s] for s in sides if s in SIDE_PACKAGES}


@pytest.mark.parametrize("name", FEATURE_PACKAGES)
def test_feature_py_is_only_the_declaration(name: str) -> None:
    tree = ast.parse((FEATURES / name / "feature.py").read_text())
    body = [node for node in tree.body
            if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))]
    strays = [f"{type(node).__name__} at line {node.lineno}" for node in body
              if not isinstance(node, DECLARATION)]
    assert strays == []
    assigned = {target.id for node in body if isinstance(node, ast.Assign | ast.AnnAssign)
                for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
                if isinstance(target, ast.Name)}
    assert "FEATURE" in assigned


def _module_of(value: Any) -> str:
    return str(value.__module__)


def _audit_parts(feature: Feature[Any]) -> list[Any]:
    """The functions of a feature's part of the audit log, except those the audit offers
    (:func:`spreadbus.audit.fold.subset_counts`)."""
    if feature.audit is None:
        return []
    made = [getattr(feature.audit, f.name) for f in dataclasses.fields(feature.audit)]
    return [m for m in made if callable(m) and not _module_of(m).startswith("spreadbus.audit.")]


@pytest.mark.parametrize("name", FEATURE_PACKAGES)
def test_a_feature_with_an_audit_module_declares_its_part_of_the_audit_log(name: str) -> None:
    feature = importlib.import_module(f"spreadbus.features.{name}.feature").FEATURE
    has_module = (FEATURES / name / "audit.py").exists()
    assert (feature.audit is not None) == has_module
    if has_module:
        audit = importlib.import_module(f"spreadbus.features.{name}.audit")
        assert feature.audit is audit.AUDIT


@pytest.mark.parametrize("name", FEATURE_PACKAGES)
def test_each_side_of_a_feature_comes_from_its_role_module(name: str) -> None:
    feature = importlib.import_module(f"spreadbus.features.{name}.feature").FEATURE
    assert isinstance(feature, Feature)
    package = f"spreadbus.features.{name}"
    sides: list[tuple[str, Any]] = [
        ("planner", feature.planner), ("webhook", feature.webhook),
        *(("offline", validate) for validate in feature.validators.values()),
        ("offline", feature.offline_plan), ("offline", feature.offline_admit),
        *(("audit", made) for made in _audit_parts(feature)),
    ]
    declared = [(role, _module_of(made)) for role, made in sides if made is not None]
    assert declared, f"{name} declares no side at all"
    assert declared == [(role, f"{package}.{role}") for role, _ in declared]


def test_what_a_feature_keeps_per_pod_comes_from_its_admission_package() -> None:
    keeping = {}
    for name in FEATURE_PACKAGES:
        feature = importlib.import_module(f"spreadbus.features.{name}.feature").FEATURE
        if feature.webhook_pods is not None:
            assert feature.webhook is not None, f"{name} keeps pods for no webhook side"
            keeping[name] = _module_of(feature.webhook_pods)
    assert keeping == {
        "workloadspread": "spreadbus.features.workloadspread.admission.kept_pod",
        "podunavailablebudget": "spreadbus.features.podunavailablebudget.admission.kept_pod",
    }
