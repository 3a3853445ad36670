"""Installing the deploy/ manifests into the local cluster, pointed at the local webhook.

The CRDs and webhook configurations in ``deploy/`` name the in-cluster webhook Service; on the
local stack the webhook is a process on this machine, so every ``clientConfig`` becomes a URL
on 127.0.0.1 at the port the webhook reported, trusted through the development CA. A CRD with
several versions converts through the same webhook, as the installation's does. Installing is
create-or-replace, so a restarted stack on the same data directory updates what it finds.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, Final

import yaml

from spreadbus.cli.stack_errors import StackError

DEPLOY: Final = Path(__file__).resolve().parents[2] / "deploy"


def install(kubeconfig: Path, webhook_port: int, ca_file: Path) -> None:
    """The CRDs (converting through the webhook) and the webhook configurations, by URL."""
    from kubernetes import client, config

    api: client.ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(kubeconfig)
    )
    with api:
        extensions = client.ApiextensionsV1Api(api)
        ca_bundle = base64.b64encode(ca_file.read_bytes()).decode()
        for path in sorted((DEPLOY / "crds").glob("*.yaml")):
            for doc in yaml.safe_load_all(path.read_text()):
                if doc:
                    create_or_replace(
                        extensions.create_custom_resource_definition,
                        extensions.replace_custom_resource_definition,
                        extensions.read_custom_resource_definition,
                        local_conversion(doc, webhook_port, ca_bundle),
                    )
        admission = client.AdmissionregistrationV1Api(api)
        for path, create, replace, read in (
            (
                DEPLOY / "webhook" / "mutating.yaml",
                admission.create_mutating_webhook_configuration,
                admission.replace_mutating_webhook_configuration,
                admission.read_mutating_webhook_configuration,
            ),
            (
                DEPLOY / "webhook" / "validating.yaml",
                admission.create_validating_webhook_configuration,
                admission.replace_validating_webhook_configuration,
                admission.read_validating_webhook_configuration,
            ),
        ):
            doc = local_webhooks(yaml.safe_load(path.read_text()), webhook_port, ca_bundle)
            create_or_replace(create, replace, read, doc)


def local_webhooks(doc: dict[str, Any], port: int, ca_bundle: str) -> dict[str, Any]:
    """The installed webhook configuration, pointed at the local webhook process by URL."""
    doc = dict(doc)
    doc["metadata"] = {"name": doc["metadata"]["name"]}
    hooks = []
    for hook in doc["webhooks"]:
        hook = dict(hook)
        path = hook["clientConfig"]["service"].get("path", "/")
        hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca_bundle}
        hooks.append(hook)
    doc["webhooks"] = hooks
    return doc


def local_conversion(crd: dict[str, Any], port: int, ca_bundle: str) -> dict[str, Any]:
    """A multi-version CRD converts through the local webhook, as the installation's does."""
    if len(crd["spec"].get("versions", [])) < 2:
        return crd
    webhook = {
        "conversionReviewVersions": ["v1"],
        "clientConfig": {"url": f"https://127.0.0.1:{port}/convert", "caBundle": ca_bundle},
    }
    spec = {**crd["spec"], "conversion": {"strategy": "Webhook", "webhook": webhook}}
    return {**crd, "spec": spec}


def create_or_replace(create: Any, replace: Any, read: Any, doc: dict[str, Any]) -> None:
    from kubernetes.client.exceptions import ApiException

    name = doc["metadata"]["name"]
    try:
        create(body=doc)
    except ApiException as exc:
        if exc.status != 409:
            raise StackError(
                f"cannot create {doc['kind']} {name}: {exc.status} {exc.body}"
            ) from exc
        current = read(name)
        doc = dict(doc)
        doc["metadata"] = {**doc["metadata"], "resourceVersion": current.metadata.resource_version}
        replace(name=name, body=doc)
