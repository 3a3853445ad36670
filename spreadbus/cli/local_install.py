"""Installing the deploy/ manifests into the local cluster, pointed at the local webhooks.

The CRDs and webhook configurations in ``deploy/`` name the in-cluster webhook Service; on the
local stack the webhook replicas are processes on this machine, so the Service is installed
without its pod selector (as for any backend outside the cluster) together with an ``Endpoints``
object listing every replica's port on 127.0.0.1, one subset each, under the Service's port
name. The API server (kubesim) then spreads its calls over the replicas as it would over a
Service's ready pods, and the webhook configurations keep their ``clientConfig.service``, with
the development CA injected as ``caBundle``; a CRD with several versions converts through the
same Service's ``conversion`` port, as the installation's does (each replica serves conversions
on a port of their own, where no client certificate is asked for). The serving certificate must
therefore name :data:`SERVICE_DNS`. Installing is create-or-replace, so a restarted stack on the
same data directory updates what it finds.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Final

import yaml

from spreadbus.cli.stack_errors import StackError

DEPLOY: Final = Path(__file__).resolve().parents[2] / "deploy"
SERVICE: Final[dict[str, Any]] = yaml.safe_load((DEPLOY / "webhook" / "service.yaml").read_text())
SERVICE_NAME: Final[str] = SERVICE["metadata"]["name"]
SERVICE_NAMESPACE: Final[str] = SERVICE["metadata"]["namespace"]
SERVICE_DNS: Final = f"{SERVICE_NAME}.{SERVICE_NAMESPACE}.svc"
"""The name the API server verifies a webhook's certificate against."""
LOCAL_ADDRESS: Final = "127.0.0.1"
REVIEWS: Final = "https"
CONVERSION: Final = "conversion"
"""The names of the Service's ports for admission reviews and for CRD conversion."""


def service_port(name: str) -> dict[str, Any]:
    """The webhook Service's port named ``name``."""
    port: dict[str, Any] = next(p for p in SERVICE["spec"]["ports"] if p.get("name") == name)
    return port


def install(kubeconfig: Path, webhook_ports: Sequence[int], ca_file: Path,
            conversion_ports: Sequence[int] = ()) -> None:
    """The namespace, the webhook Service and its endpoints, the CRDs, the configurations;
    ``conversion_ports``, one per replica, when the replicas serve conversions apart."""
    from kubernetes import client, config

    api: client.ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(kubeconfig)
    )
    with api:
        core: Any = client.CoreV1Api(api)
        namespace = yaml.safe_load((DEPLOY / "namespace.yaml").read_text())
        create_or_replace(
            core.create_namespace, core.replace_namespace, core.read_namespace, namespace
        )
        ns = SERVICE_NAMESPACE
        create_or_replace(
            partial(core.create_namespaced_service, ns),
            partial(core.replace_namespaced_service, namespace=ns),
            partial(core.read_namespaced_service, namespace=ns),
            local_service(),
            keep=_keep_cluster_ip,
        )
        _replace_endpoints(core, local_endpoints(webhook_ports,
                                                 conversion_ports=conversion_ports))
        extensions = client.ApiextensionsV1Api(api)
        ca_bundle = base64.b64encode(ca_file.read_bytes()).decode()
        for path in sorted((DEPLOY / "crds").glob("*.yaml")):
            for doc in yaml.safe_load_all(path.read_text()):
                if doc:
                    create_or_replace(
                        extensions.create_custom_resource_definition,
                        extensions.replace_custom_resource_definition,
                        extensions.read_custom_resource_definition,
                        service_conversion(doc, ca_bundle, apart=bool(conversion_ports)),
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
            doc = with_ca_bundle(yaml.safe_load(path.read_text()), ca_bundle)
            create_or_replace(create, replace, read, doc)


def local_service() -> dict[str, Any]:
    """The installation's Service without its selector: its endpoints are written here."""
    spec = {k: v for k, v in SERVICE["spec"].items() if k != "selector"}
    return {**SERVICE, "spec": spec}


def local_endpoints(ports: Sequence[int], ready: Sequence[bool] | None = None, *,
                    conversion_ports: Sequence[int] = ()) -> dict[str, Any]:
    """One subset per local replica, its review port (and conversion port, when given) under
    the Service's port names.

    A replica that is not ready is listed under ``notReadyAddresses``, as the endpoints
    controller lists a pod that fails its readiness probe, so no call is sent to it.
    """
    flags = list(ready) if ready is not None else [True] * len(ports)
    conversions = list(conversion_ports) or [0] * len(ports)

    def named(port: int, conversion: int) -> list[dict[str, Any]]:
        out = [{"name": REVIEWS, "port": port, "protocol": "TCP"}]
        if conversion:
            out.append({"name": CONVERSION, "port": conversion, "protocol": "TCP"})
        return out

    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": SERVICE_NAME, "namespace": SERVICE_NAMESPACE},
        "subsets": [
            {
                "addresses" if up else "notReadyAddresses": [{"ip": LOCAL_ADDRESS}],
                "ports": named(port, conversion),
            }
            for port, up, conversion in zip(ports, flags, conversions, strict=True)
        ],
    }


def write_endpoints(kubeconfig: Path, ports: Sequence[int], ready: Sequence[bool],
                    conversion_ports: Sequence[int] = ()) -> None:
    """Replace the webhook Service's endpoints with the replicas' current readiness."""
    from kubernetes import client, config

    api: client.ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(kubeconfig)
    )
    with api:
        _replace_endpoints(client.CoreV1Api(api),
                           local_endpoints(ports, ready, conversion_ports=conversion_ports))


def _replace_endpoints(core: Any, endpoints: dict[str, Any]) -> None:
    ns = SERVICE_NAMESPACE
    create_or_replace(
        partial(core.create_namespaced_endpoints, ns),
        partial(core.replace_namespaced_endpoints, namespace=ns),
        partial(core.read_namespaced_endpoints, namespace=ns),
        endpoints,
    )


def with_ca_bundle(doc: dict[str, Any], ca_bundle: str) -> dict[str, Any]:
    """The installation's webhook configuration, trusting the development CA."""
    doc = dict(doc)
    doc["metadata"] = {"name": doc["metadata"]["name"]}
    doc["webhooks"] = [
        {**hook, "clientConfig": {**hook["clientConfig"], "caBundle": ca_bundle}}
        for hook in doc["webhooks"]
    ]
    return doc


def service_conversion(crd: dict[str, Any], ca_bundle: str, *, apart: bool = True
                       ) -> dict[str, Any]:
    """A multi-version CRD converts through the webhook Service, as the installation's does:
    on its conversion port, or on the review port when the replicas do not serve conversions
    ``apart``."""
    service = {
        "namespace": SERVICE_NAMESPACE,
        "name": SERVICE_NAME,
        "path": "/convert",
        "port": service_port(CONVERSION if apart else REVIEWS)["port"],
    }
    return _converting_through(crd, {"service": service, "caBundle": ca_bundle})


def local_conversion(crd: dict[str, Any], port: int, ca_bundle: str) -> dict[str, Any]:
    """A multi-version CRD converting through one webhook listening on 127.0.0.1 by URL."""
    url = f"https://{LOCAL_ADDRESS}:{port}/convert"
    return _converting_through(crd, {"url": url, "caBundle": ca_bundle})


def _converting_through(crd: dict[str, Any], client_config: dict[str, Any]) -> dict[str, Any]:
    """``crd`` converting through the webhook at ``client_config``; one version needs none."""
    if len(crd["spec"].get("versions", [])) < 2:
        return crd
    webhook = {"conversionReviewVersions": ["v1"], "clientConfig": client_config}
    spec = {**crd["spec"], "conversion": {"strategy": "Webhook", "webhook": webhook}}
    return {**crd, "spec": spec}


def _keep_cluster_ip(doc: dict[str, Any], current: Any) -> dict[str, Any]:
    """A Service's clusterIP is immutable: a replacement carries the one it was given."""
    return {**doc, "spec": {**doc["spec"], "clusterIP": current.spec.cluster_ip}}


def create_or_replace(
    create: Any,
    replace: Any,
    read: Any,
    doc: dict[str, Any],
    *,
    keep: Callable[[dict[str, Any], Any], dict[str, Any]] | None = None,
) -> None:
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
        doc = dict(doc) if keep is None else keep(doc, current)
        doc["metadata"] = {**doc["metadata"], "resourceVersion": current.metadata.resource_version}
        replace(name=name, body=doc)
