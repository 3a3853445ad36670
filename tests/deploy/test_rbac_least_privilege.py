"""Each service's RBAC grants exactly the API access its code needs, no more and no less."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml

from events.messages import Verb
from spreadbus.engine.api_access import PLAN_REQUESTS, Access, plan_access, watch_access
from spreadbus.engine.feature_set import plan_grants, watched_resources
from spreadbus.engine.plan_grants import PlanGrant
from spreadbus.features.propagation.planning.templates import GRANTED_APART
from spreadbus.features.propagation.settings import PropagationSettings
from spreadbus.features.registry import BUILTIN

from .conftest import KUBECTL, ROOT

PROPAGATING = PropagationSettings(propagate_configmaps=True).watches()
"""What a watcher with ``--propagate-configmaps`` watches beyond the features' own: one role
serves the watcher with the setting and without it."""

ACTUATOR = plan_access(plan_grants(BUILTIN))
NEEDED = {
    "spreadbus-watcher": watch_access((*watched_resources(BUILTIN), *PROPAGATING)),
    "spreadbus-actuator": frozenset(
        a for a in ACTUATOR if (a.group, a.resource) not in GRANTED_APART),
    "spreadbus-planner": frozenset(),
    "spreadbus-webhook": frozenset(),
}


def granted(docs: list[dict[str, Any]], account: str) -> set[Access]:
    """Every (group, resource, verb) the roles bound to ``account`` allow, wildcards kept."""
    roles = {(d["kind"], d["metadata"]["name"]): d for d in docs if d["kind"].endswith("Role")}
    out: set[Access] = set()
    for binding in docs:
        if not binding["kind"].endswith("RoleBinding"):
            continue
        if not any(s.get("name") == account for s in binding.get("subjects", [])):
            continue
        ref = binding["roleRef"]
        for rule in roles[(ref["kind"], ref["name"])].get("rules", []):
            assert not rule.get("resourceNames"), "grants here are by resource, not by name"
            out |= {
                Access(group, resource, verb)
                for group in rule["apiGroups"]
                for resource in rule["resources"]
                for verb in rule["verbs"]
            }
    return out


def test_every_plan_verb_on_the_bus_has_its_api_requests_declared() -> None:
    assert set(PLAN_REQUESTS) == set(get_args(Verb))


def test_a_status_plan_may_read_its_object_before_patching_the_status() -> None:
    needed = plan_access([PlanGrant(rule="r", verb="patch_status", group="apps.kruise.io",
                                    resource="workloadspreads", writes=(("status",),))])
    assert needed == {
        Access("apps.kruise.io", "workloadspreads", "get"),
        Access("apps.kruise.io", "workloadspreads/status", "patch"),
    }


@pytest.mark.parametrize("account", sorted(NEEDED))
def test_the_rendered_rbac_grants_a_service_exactly_what_it_needs(
    rendered: list[dict[str, Any]], account: str
) -> None:
    have = granted(rendered, account)
    assert not any("*" in access for access in have), "no wildcards"
    assert sorted(NEEDED[account] - have) == [], "missing grants"
    assert sorted(have - NEEDED[account]) == [], "grants beyond what the code uses"


def test_a_create_may_read_the_object_holding_its_name_and_a_delete_only_deletes() -> None:
    assert plan_access([
        PlanGrant(rule="r", verb="create", group="apps", resource="deployments"),
        PlanGrant(rule="r", verb="delete", group="", resource="configmaps"),
    ]) == {
        Access("apps", "deployments", "create"),
        Access("apps", "deployments", "get"),
        Access("", "configmaps", "delete"),
    }


def test_a_delete_of_owned_objects_reads_the_owner_first() -> None:
    owned = PlanGrant(rule="r", verb="delete", group="apps", resource="deployments",
                      owner=("apps.kruise.io", "UnitedDeployment"))
    assert plan_access([owned]) == {
        Access("apps", "deployments", "delete"),
        Access("apps", "deployments", "get"),
    }


def test_only_the_clusterrole_component_grants_writing_clusterroles_and_never_escalate(
    rendered: list[dict[str, Any]], tmp_path: Path,
) -> None:
    """ClusterRoles are propagated only where an operator adds the component, which grants
    the watcher and the actuator exactly what propagating them needs: never ``escalate`` or
    ``bind``, so a member's API server still refuses a role granting more than the actuator
    holds."""
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    base = os.path.relpath(ROOT / "deploy", overlay)
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [base], "components": [f"{base}/components/propagate-clusterroles"],
    }))
    docs = [d for d in yaml.safe_load_all(subprocess.run(
        [str(KUBECTL), "kustomize", str(overlay)], check=True, capture_output=True, text=True,
        timeout=60).stdout) if d]
    apart = {a for a in ACTUATOR if (a.group, a.resource) in GRANTED_APART}
    assert apart >= {Access("rbac.authorization.k8s.io", "clusterroles", v)
                     for v in ("create", "get", "patch", "delete")}
    assert not apart & granted(rendered, "spreadbus-actuator")
    watch = watch_access(PropagationSettings(propagate_clusterroles=True).watches())
    assert watch == {Access("rbac.authorization.k8s.io", "clusterroles", v)
                     for v in ("list", "watch")}
    assert granted(docs, "spreadbus-actuator") == NEEDED["spreadbus-actuator"] | apart
    assert granted(docs, "spreadbus-watcher") == NEEDED["spreadbus-watcher"] | watch
    (watcher,) = [d for d in docs if d["kind"] == "Deployment"
                  and d["metadata"]["name"] == "spreadbus-watcher"]
    assert "--propagate-clusterroles=true" in watcher["spec"]["template"]["spec"][
        "containers"][0]["args"]
