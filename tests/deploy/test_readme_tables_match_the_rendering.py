"""deploy/README.md's tables of CRDs, roles and failure policies are those of the rendering."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.deploy.readme_tables import README, TABLES, rewritten, tables_in, webhook_table


def test_every_table_of_the_readme_is_what_the_rendered_objects_give(
    rendered: list[dict[str, Any]],
) -> None:
    written = tables_in(README.read_text())
    assert set(written) == set(TABLES), "each rendered table appears once in the README"
    for name, table in TABLES.items():
        assert written[name] == table(rendered), (
            f"deploy/README.md's {name} table differs from `kubectl kustomize deploy/`: "
            "run `python -m tests.deploy.readme_tables`"
        )


def test_the_tables_name_every_kind_webhook_and_delete_grant(
    rendered: list[dict[str, Any]],
) -> None:
    written = tables_in(README.read_text())
    crds = [o for o in rendered if o["kind"] == "CustomResourceDefinition"]
    assert len(crds) == written["crds"].count("\n") - 1 == 10
    assert "| PodUnavailableBudget | policy.kruise.io |" in written["crds"]
    hooks = sum(len(o["webhooks"]) for o in rendered if o["kind"].endswith("WebhookConfiguration"))
    assert hooks == written["failure-policies"].count("\n") - 1 == 7
    assert "`create`, `get`, `patch`, `delete`" in written["rbac"]


def test_a_changed_rendering_changes_the_tables(rendered: list[dict[str, Any]]) -> None:
    changed = copy.deepcopy(rendered)
    for obj in changed:
        if obj["kind"] == "ValidatingWebhookConfiguration":
            obj["webhooks"][0]["failurePolicy"] = "Fail"
    text = README.read_text()
    assert tables_in(rewritten(text, changed)) != tables_in(rewritten(text, rendered))
    for obj in changed:
        if obj["kind"] == "ValidatingWebhookConfiguration":
            obj["webhooks"][0]["name"] = "vnew.spreadbus.io"
    with pytest.raises(KeyError, match=r"vnew\.spreadbus\.io"):
        webhook_table(changed)
