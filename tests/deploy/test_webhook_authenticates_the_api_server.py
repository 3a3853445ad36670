"""The installed webhook serves reviews only to the API server's client certificate.

Its review port requires a client certificate from a CA that issues nothing else; the Secret
the API server's certificate is in comes from cert-manager; CRD conversion, for which
kube-apiserver has no setting to present a certificate, reaches a port of its own, the one port
told to serve callers without one.
"""

from __future__ import annotations

from typing import Any

from tests.deploy.test_kustomize_render import find


def webhook_pod(rendered: list[dict[str, Any]]) -> dict[str, Any]:
    (deployment,) = find(rendered, "Deployment", "spreadbus-webhook")
    pod: dict[str, Any] = deployment["spec"]["template"]["spec"]
    return pod


def flag(args: list[str], name: str) -> str:
    (value,) = [a.split("=", 1)[1] for a in args if a.startswith(f"--{name}=")]
    return value


def test_the_review_port_trusts_only_the_ca_of_the_api_servers_client_certificate(
    rendered: list[dict[str, Any]],
) -> None:
    pod = webhook_pod(rendered)
    (container,) = pod["containers"]
    client_ca = flag(container["args"], "client-ca")
    (mount,) = [m for m in container["volumeMounts"] if client_ca.startswith(m["mountPath"] + "/")]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    secret = volume["secret"]
    assert secret["items"] == [{"key": "ca.crt", "path": client_ca.rsplit("/", 1)[1]}], (
        "the CA certificate only, never its key")
    certificates = {c["spec"]["secretName"]: c for c in find(rendered, "Certificate")}
    ca = certificates[secret["secretName"]]
    assert ca["spec"]["isCA"] is True
    (issuer,) = [i for i in find(rendered, "Issuer")
                 if i["spec"].get("ca", {}).get("secretName") == secret["secretName"]]
    issued = [c for c in certificates.values()
              if c["spec"]["issuerRef"]["name"] == issuer["metadata"]["name"]]
    assert [c["metadata"]["name"] for c in issued] == ["spreadbus-apiserver-client"]
    assert issued[0]["spec"]["usages"] == ["client auth"]
    serving = certificates[next(v["secret"]["secretName"] for v in pod["volumes"]
                                if v["name"] == "tls")]
    assert serving["spec"]["issuerRef"]["name"] != issuer["metadata"]["name"]


def test_conversion_reaches_the_port_served_without_client_certificates(
    rendered: list[dict[str, Any]],
) -> None:
    (crd,) = find(rendered, "CustomResourceDefinition", "workloadspreads.apps.kruise.io")
    target = crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]
    (service,) = find(rendered, "Service", target["name"])
    (port,) = [p for p in service["spec"]["ports"] if p["port"] == target["port"]]
    (container,) = webhook_pod(rendered)["containers"]
    (container_port,) = [p for p in container["ports"] if p["name"] == port["targetPort"]]
    assert int(flag(container["args"], "conversion-port")) == container_port["containerPort"]
    assert int(flag(container["args"], "port")) != container_port["containerPort"]
    # the webhook would ask the conversion port for the client certificate too by default
    assert flag(container["args"], "conversion-client-certificate") == "false"
    for config in find(rendered, "MutatingWebhookConfiguration") + find(
            rendered, "ValidatingWebhookConfiguration"):
        for hook in config["webhooks"]:
            reviews = hook["clientConfig"]["service"].get("port", 443)
            (review_port,) = [p for p in service["spec"]["ports"] if p["port"] == reviews]
            assert review_port["targetPort"] == "https"
