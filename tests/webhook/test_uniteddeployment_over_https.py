"""The UnitedDeployment handlers of a running webhook replica, over HTTPS."""

from __future__ import annotations

import base64
import json
from typing import Any

from kubesemantics import json_patch
from spreadbus.features.uniteddeployment.core.defaulting import default_uniteddeployment
from tests.uniteddeployment.test_validation_rules import base, stateful
from tests.webhook.admission_reviews import review
from tests.webhook.conftest import RunningWebhook

JSON = dict[str, Any]


def ud_review(operation: str, obj: JSON | None, old: JSON | None = None,
              sub_resource: str = "") -> JSON:
    return review(operation=operation, group="apps.kruise.io", version="v1alpha1",
                  resource="uniteddeployments", name="sample-ud", obj=obj, old=old,
                  sub_resource=sub_resource)


async def post(webhook: RunningWebhook, path: str, body: JSON) -> JSON:
    async with webhook.http.post(f"{webhook.url}{path}", json=body) as response:
        assert response.status == 200
        answer: JSON = (await response.json())["response"]
    assert answer["uid"] == body["request"]["uid"]
    return answer


async def test_a_create_gets_kruises_defaults_as_a_json_patch(webhook: RunningWebhook) -> None:
    ud = stateful(base())
    del ud["spec"]["updateStrategy"]
    ud["status"] = {"replicas": 2}
    answer = await post(webhook, "/mutate-uniteddeployment", ud_review("CREATE", ud))
    assert answer["allowed"] is True
    assert answer["patchType"] == "JSONPatch"
    patch = json.loads(base64.b64decode(answer["patch"]))
    patched = json_patch.apply(ud, patch)
    assert patched == default_uniteddeployment(ud)
    assert patched["spec"]["updateStrategy"] == {"type": "Manual", "manualUpdate": {}}
    assert patched["spec"]["replicas"] == 6
    assert "status" not in patched


async def test_an_already_defaulted_update_needs_no_patch(webhook: RunningWebhook) -> None:
    ud = default_uniteddeployment(base())
    answer = await post(webhook, "/mutate-uniteddeployment", ud_review("UPDATE", ud, ud))
    assert answer["allowed"] is True
    assert "patch" not in answer


async def test_an_invalid_create_is_denied_naming_every_field(webhook: RunningWebhook) -> None:
    ud = base()
    ud["spec"]["topology"]["subsets"][2]["name"] = "subset-a"
    ud["spec"]["updateStrategy"]["type"] = "Rolling"
    answer = await post(webhook, "/validate-uniteddeployment", ud_review("CREATE", ud))
    assert answer["allowed"] is False
    status = answer["status"]
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert [(c["field"], c["reason"]) for c in status["details"]["causes"]] == [
        ("spec.topology.subsets[2].name", "FieldInvalid"),
        ("spec.updateStrategy.type", "FieldNotSupported"),
    ]
    assert status["message"] == (
        "[spec.topology.subsets[2].name: Invalid value: duplicated subset name subset-a, "
        'spec.updateStrategy.type: Unsupported value: supported values: "Manual", ""]')


async def test_an_update_changing_tolerations_is_denied(webhook: RunningWebhook) -> None:
    old = base()
    new = base()
    new["spec"]["topology"]["subsets"][0]["tolerations"] = [{"operator": "Exists"}]
    answer = await post(webhook, "/validate-uniteddeployment", ud_review("UPDATE", new, old))
    assert answer["allowed"] is False
    causes = answer["status"]["details"]["causes"]
    assert [c["field"] for c in causes] == ["spec.topology.subsets[0].tolerations"] * 2
    assert answer["status"]["message"] == (
        "spec.topology.subsets[0].tolerations: Forbidden: may not be changed in an update")


async def test_a_valid_object_and_the_scale_subresource_are_allowed(
    webhook: RunningWebhook,
) -> None:
    answer = await post(webhook, "/validate-uniteddeployment", ud_review("CREATE", base()))
    assert answer["allowed"] is True
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale", "spec": {"replicas": -1}}
    answer = await post(webhook, "/validate-uniteddeployment",
                        ud_review("UPDATE", scale, scale, sub_resource="scale"))
    assert answer["allowed"] is True


async def test_ten_thousand_subsets_are_denied_as_too_many(webhook: RunningWebhook) -> None:
    ud = base()
    ud["spec"]["replicas"] = 10_000
    ud["spec"]["topology"]["subsets"] = [{"name": f"s{i}", "replicas": 1} for i in range(10_000)]
    ud["spec"]["updateStrategy"] = {"type": "Manual"}
    answer = await post(webhook, "/validate-uniteddeployment", ud_review("CREATE", ud))
    assert answer["allowed"] is False
    assert answer["status"]["details"]["causes"] == [
        {"field": "spec.topology.subsets", "reason": "FieldTooMany",
         "message": "must have at most 100 items"}]


async def test_deletion_protection(webhook: RunningWebhook) -> None:
    def labelled(value: str, replicas: int) -> JSON:
        ud = base()
        ud["metadata"]["labels"] = {"policy.kruise.io/delete-protection": value}
        ud["spec"]["replicas"] = replicas
        return ud

    path = "/validate-uniteddeployment"
    always = await post(webhook, path, ud_review("DELETE", None, labelled("Always", 0)))
    assert always["allowed"] is False
    assert always["status"]["code"] == 403
    assert always["status"]["message"] == (
        "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Always")
    cascading = await post(webhook, path, ud_review("DELETE", None, labelled("Cascading", 6)))
    assert cascading["allowed"] is False
    assert cascading["status"]["message"].endswith("=Cascading and replicas 6>0")
    emptied = await post(webhook, path, ud_review("DELETE", None, labelled("Cascading", 0)))
    assert emptied["allowed"] is True
    plain = await post(webhook, path, ud_review("DELETE", None, base()))
    assert plain["allowed"] is True


def test_the_handlers_carry_the_features_name() -> None:
    from spreadbus.features.uniteddeployment.feature import FEATURE
    from spreadbus.features.uniteddeployment.webhook import UnitedDeploymentWebhook

    assert {h.feature for h in UnitedDeploymentWebhook().handlers} == {FEATURE.name}
    assert FEATURE.webhook is not None
