"""A pod's volumes and its containers' volume mounts, checked as ``ValidatePodSpec`` checks them.

The parts of ``validateVolumes`` and ``ValidateVolumeMounts`` (core/validation, Kubernetes 1.32)
that decide whether a pod can run at all: each volume named (a DNS label, unique) with exactly
one source (a ``persistentVolumeClaim`` naming its claim), and each mount naming a volume that
passed those checks, with a unique ``mountPath`` and a relative ``subPath`` without ``..``. The
sources' own fields (a secret's name, a host path's type...) are not checked, nor volume devices.

A StatefulSet's template is not a pod spec in this sense: its mounts may name a
volumeClaimTemplate, which the API server leaves unchecked there. A caller that wants the pod's
view adds one volume per claim template first, as Kruise's WorkloadSpread webhook does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubesemantics.field_errors import FieldError, Path, forbidden, invalid, required
from kubesemantics.qualified_names import is_dns1123_label
from kubesemantics.scheduling_validation import type_error

VOLUME_SOURCES: Final = (
    "emptyDir", "hostPath", "gitRepo", "gcePersistentDisk", "awsElasticBlockStore", "secret",
    "nfs", "iscsi", "glusterfs", "flocker", "persistentVolumeClaim", "rbd", "cinder", "cephfs",
    "quobyte", "downwardAPI", "fc", "flexVolume", "configMap", "azureFile", "vsphereVolume",
    "photonPersistentDisk", "portworxVolume", "azureDisk", "storageos", "projected", "scaleIO",
    "csi", "ephemeral", "image",
)
"""The volume sources in the order ``validateVolumeSource`` meets them: each one after the first
present is reported as more than one."""

_REPORTED_AS: Final = {"cephfs": "cephFS", "downwardAPI": "downwarAPI"}
"""Two sources Kubernetes names differently in that error (its spelling, kept)."""

_CONTAINER_LISTS: Final = ("initContainers", "containers")


def not_found(path: Path, value: Any) -> FieldError:
    """Kubernetes' ``field.NotFound``: the value names nothing that exists."""
    return FieldError(str(path), "NotFound", "", value)


def _source_errors(volume: Mapping[str, Any], path: Path) -> list[FieldError]:
    present = [name for name in VOLUME_SOURCES if volume.get(name) is not None]
    if not present:
        return [required(path, "must specify a volume type")]
    errors = [forbidden(path.child(_REPORTED_AS.get(name, name)),
                        "may not specify more than 1 volume type") for name in present[1:]]
    claim = volume.get("persistentVolumeClaim")
    if present[0] == "persistentVolumeClaim" and isinstance(claim, Mapping):
        name = claim.get("claimName")
        if not isinstance(name, str) or not name:
            errors.append(required(path.child("persistentVolumeClaim", "claimName"), ""))
    return errors


def validate_volumes(volumes: object, path: Path) -> tuple[list[FieldError], set[str]]:
    """The errors of ``spec.volumes`` and the names of the volumes without any (those a mount
    may name)."""
    if volumes is None:
        return [], set()
    if not isinstance(volumes, list):
        return [type_error(path, "array", volumes)], set()
    errors: list[FieldError] = []
    names: set[str] = set()
    for i, volume in enumerate(volumes):
        vp = path.index(i)
        if not isinstance(volume, Mapping):
            errors.append(type_error(vp, "object", volume))
            continue
        found: list[FieldError] = []
        name = volume.get("name")
        if name is None or name == "":
            found.append(required(vp.child("name"), ""))
        elif not isinstance(name, str):
            found.append(type_error(vp.child("name"), "string", name))
        else:
            found.extend(invalid(vp.child("name"), m, name) for m in is_dns1123_label(name))
            if name in names:
                found.append(FieldError(str(vp.child("name")), "Duplicate", "", name))
        found.extend(_source_errors(volume, vp))
        if not found and isinstance(name, str):
            names.add(name)
        errors.extend(found)
    return errors, names


def _sub_path_errors(sub_path: str, path: Path) -> list[FieldError]:
    """``validateLocalDescendingPath``: relative, and never stepping up."""
    errors = []
    if sub_path.startswith("/"):
        errors.append(invalid(path, "must be a relative path", sub_path))
    if ".." in sub_path.replace("\\", "/").split("/"):
        errors.append(invalid(path, "must not contain '..'", sub_path))
    return errors


def validate_volume_mounts(mounts: object, volumes: set[str], path: Path) -> list[FieldError]:
    """``ValidateVolumeMounts`` of one container; ``path`` is its ``volumeMounts``."""
    if mounts is None:
        return []
    if not isinstance(mounts, list):
        return [type_error(path, "array", mounts)]
    errors: list[FieldError] = []
    mount_points: set[str] = set()
    for i, mount in enumerate(mounts):
        mp = path.index(i)
        if not isinstance(mount, Mapping):
            errors.append(type_error(mp, "object", mount))
            continue
        name = mount.get("name")
        name = name if isinstance(name, str) else ""
        if not name:
            errors.append(required(mp.child("name"), ""))
        if name not in volumes:
            errors.append(not_found(mp.child("name"), name))
        mount_path = mount.get("mountPath")
        mount_path = mount_path if isinstance(mount_path, str) else ""
        if not mount_path:
            errors.append(required(mp.child("mountPath"), ""))
        if mount_path in mount_points:
            errors.append(invalid(mp.child("mountPath"), "must be unique", mount_path))
        mount_points.add(mount_path)
        sub_path = mount.get("subPath")
        if isinstance(sub_path, str) and sub_path:
            # Kubernetes names the list here, not the mount: ``volumeMounts.subPath``.
            errors.extend(_sub_path_errors(sub_path, path.child("subPath")))
    return errors


def validate_pod_volumes(spec: object, path: Path) -> list[FieldError]:
    """The volumes of a pod spec at ``path`` and every container's mounts against them."""
    if not isinstance(spec, Mapping):
        return []
    errors, names = validate_volumes(spec.get("volumes"), path.child("volumes"))
    for list_name in _CONTAINER_LISTS:
        containers = spec.get(list_name)
        if not isinstance(containers, list):
            continue
        for i, container in enumerate(containers):
            if isinstance(container, Mapping):
                errors.extend(validate_volume_mounts(
                    container.get("volumeMounts"), names,
                    path.child(list_name).index(i).child("volumeMounts")))
    return errors
