"""The defaults Kubernetes gives a pod spec in a workload template (``SetDefaults_PodSpec`` and the
per-container, per-volume and per-probe defaulters of core/v1, Kubernetes 1.32).

A defaulting webhook that writes them into a template (Kruise's does, for a UnitedDeployment's
``statefulSetTemplate``) makes the stored template equal to what the API server would store for
the workload, so comparing the two later shows no spurious difference. Only fields left unset
are filled; a value of the wrong JSON type is left as it is, for validation to report.

``always_pull``: Kruise defaults a regular container's empty ``imagePullPolicy`` to ``Always``
(in-place updates need it) before Kubernetes' own rule (``Always`` for a ``latest`` or missing
tag, ``IfNotPresent`` otherwise) gets a chance; init containers keep Kubernetes' rule.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

JSON = dict[str, Any]

DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = 30
DEFAULT_FILE_MODE = 0o644
"""``defaultMode`` of secret, configMap, downwardAPI and projected volumes (420)."""
TOKEN_EXPIRATION_SECONDS = 3600

_VOLUME_SOURCES = frozenset({
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret",
    "nfs", "iscsi", "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder",
    "cephfs", "flocker", "downwardAPI", "fc", "azureFile", "configMap", "vsphereVolume",
    "quobyte", "azureDisk", "photonPersistentDisk", "projected", "portworxVolume", "scaleIO",
    "storageos", "csi", "ephemeral", "image",
})


def _objects(value: object) -> Iterable[JSON]:
    return (v for v in value if isinstance(v, dict)) if isinstance(value, list) else ()


def image_tag_is_latest(image: str) -> bool:
    """Whether Kubernetes reads the image as ``:latest`` (also when it names no tag and no
    digest), as ``parsers.ParseImageName`` does; a digest beside an explicit ``latest`` tag
    still reads as ``latest``."""
    name, digest_sign, _ = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    if ":" not in last:
        return not digest_sign  # neither tag nor digest: "latest"
    return last.rsplit(":", 1)[1] == "latest"


def _http_get(action: object) -> None:
    if isinstance(action, dict):
        action.setdefault("path", "/")
        action.setdefault("scheme", "HTTP")


def _probe(probe: object) -> None:
    if not isinstance(probe, dict):
        return
    probe.setdefault("timeoutSeconds", 1)
    probe.setdefault("periodSeconds", 10)
    probe.setdefault("successThreshold", 1)
    probe.setdefault("failureThreshold", 3)
    _http_get(probe.get("httpGet"))


def _field_ref(ref: object) -> None:
    if isinstance(ref, dict):
        ref.setdefault("apiVersion", "v1")


def default_container(container: JSON, *, always_pull: bool = False) -> None:
    """``SetDefaults_Container`` plus the defaults of its ports, env, probes and lifecycle."""
    if not container.get("imagePullPolicy"):
        image = container.get("image")
        if always_pull:
            container["imagePullPolicy"] = "Always"
        elif isinstance(image, str):
            container["imagePullPolicy"] = "Always" if image_tag_is_latest(image) else (
                "IfNotPresent")
    if not container.get("terminationMessagePath"):
        container["terminationMessagePath"] = "/dev/termination-log"
    if not container.get("terminationMessagePolicy"):
        container["terminationMessagePolicy"] = "File"
    container.setdefault("resources", {})
    _container_parts(container)


def _container_parts(container: JSON) -> None:
    """The defaults of a container's ports, env, probes and lifecycle hooks (every kind of
    container, ephemeral ones included)."""
    for port in _objects(container.get("ports")):
        if not port.get("protocol"):
            port["protocol"] = "TCP"
    for env in _objects(container.get("env")):
        source = env.get("valueFrom")
        if isinstance(source, dict):
            _field_ref(source.get("fieldRef"))
    for name in ("livenessProbe", "readinessProbe", "startupProbe"):
        _probe(container.get(name))
    lifecycle = container.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            handler = lifecycle.get(hook)
            if isinstance(handler, dict):
                _http_get(handler.get("httpGet"))


def default_volume(volume: JSON) -> None:
    """``SetDefaults_Volume`` (no source: an emptyDir) and the defaults of each source."""
    if not any(key in _VOLUME_SOURCES for key in volume):
        volume["emptyDir"] = {}
    host_path = volume.get("hostPath")
    if isinstance(host_path, dict):
        host_path.setdefault("type", "")
    for name in ("secret", "configMap", "downwardAPI", "projected"):
        source = volume.get(name)
        if isinstance(source, dict):
            source.setdefault("defaultMode", DEFAULT_FILE_MODE)
    downward = volume.get("downwardAPI")
    if isinstance(downward, dict):
        for item in _objects(downward.get("items")):
            _field_ref(item.get("fieldRef"))
    projected = volume.get("projected")
    if isinstance(projected, dict):
        for source in _objects(projected.get("sources")):
            api = source.get("downwardAPI")
            if isinstance(api, dict):
                for item in _objects(api.get("items")):
                    _field_ref(item.get("fieldRef"))
            token = source.get("serviceAccountToken")
            if isinstance(token, dict):
                token.setdefault("expirationSeconds", TOKEN_EXPIRATION_SECONDS)


def default_pod_spec(spec: JSON, *, always_pull: bool = False) -> None:
    """Fill the unset fields of a template's pod spec in place."""
    if not spec.get("dnsPolicy"):
        spec["dnsPolicy"] = "ClusterFirst"
    if not spec.get("restartPolicy"):
        spec["restartPolicy"] = "Always"
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS
    if not spec.get("schedulerName"):
        spec["schedulerName"] = "default-scheduler"
    for volume in _objects(spec.get("volumes")):
        default_volume(volume)
    for container in _objects(spec.get("initContainers")):
        default_container(container)
    for container in _objects(spec.get("containers")):
        default_container(container, always_pull=always_pull)
    for container in _objects(spec.get("ephemeralContainers")):
        _container_parts(container)


def default_claim_template(claim: JSON) -> None:
    """``SetDefaults_PersistentVolumeClaim``: a claim template's status phase is ``Pending``."""
    status = claim.get("status")
    if status is None:
        status = claim["status"] = {}
    if isinstance(status, dict) and not status.get("phase"):
        status["phase"] = "Pending"
