"""Turning a CustomResourceDefinition into served resource types, and validating the CRD.

A CRD is accepted and established at once (there is no naming controller delay); its status
gets the ``NamesAccepted`` and ``Established`` conditions real clients wait for.
"""

from __future__ import annotations

from typing import Any

from kubesemantics import strategic_merge
from kubesim import errors
from kubesim import schema as schema_checks
from kubesim.errors import FieldError
from kubesim.registry import PrinterColumn, ResourceType, ScalePaths

JsonObject = dict[str, Any]


def validate(crd: JsonObject) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return [errors.required("spec")]
    group = spec.get("group")
    names = spec.get("names") or {}
    if not isinstance(names, dict):
        return [errors.invalid("spec.names", names, "must be an object")]
    if not group:
        errs.append(errors.required("spec.group"))
    elif "." not in group:
        errs.append(errors.invalid("spec.group", group, "should be a domain with at least one dot"))
    plural = names.get("plural")
    if not plural:
        errs.append(errors.required("spec.names.plural"))
    if not names.get("kind"):
        errs.append(errors.required("spec.names.kind"))
    if not names.get("listKind") and names.get("kind"):
        names["listKind"] = names["kind"] + "List"
    if plural and group and crd["metadata"]["name"] != f"{plural}.{group}":
        errs.append(
            errors.invalid(
                "metadata.name", crd["metadata"]["name"], 'must be spec.names.plural+"."+spec.group'
            )
        )
    scope = spec.get("scope")
    if scope not in ("Namespaced", "Cluster"):
        errs.append(errors.not_supported("spec.scope", scope, ["Cluster", "Namespaced"]))
    versions = spec.get("versions")
    if not versions:
        errs.append(
            errors.required(
                "spec.versions", "must have exactly one version marked as storage version"
            )
        )
    else:
        storage = [v for v in versions if isinstance(v, dict) and v.get("storage")]
        if len(storage) != 1:
            errs.append(
                errors.invalid(
                    "spec.versions",
                    versions,
                    "must have exactly one version marked as storage version",
                )
            )
        for i, v in enumerate(versions):
            if not isinstance(v, dict) or not v.get("name"):
                errs.append(errors.required(f"spec.versions[{i}].name"))
                continue
            errs.extend(_validate_version_shape(v, f"spec.versions[{i}]"))
            if "served" not in v:
                errs.append(errors.required(f"spec.versions[{i}].served"))
            schema = (v.get("schema") or {}).get("openAPIV3Schema")
            if schema is None:
                errs.append(
                    errors.required(
                        f"spec.versions[{i}].schema.openAPIV3Schema", "schemas are required"
                    )
                )
            elif isinstance(v.get("schema"), dict):
                errs.extend(
                    schema_checks.validate_schema(
                        schema, f"spec.versions[{i}].schema.openAPIV3Schema"
                    )
                )
            scale = (v.get("subresources") or {}).get("scale")
            if isinstance(scale, dict):
                for f in ("specReplicasPath", "statusReplicasPath"):
                    if not scale.get(f):
                        errs.append(errors.required(f"spec.versions[{i}].subresources.scale.{f}"))
    return errs


def _validate_version_shape(v: JsonObject, p: str) -> list[FieldError]:
    errs: list[FieldError] = []
    subs = v.get("subresources")
    if subs is not None and not isinstance(subs, dict):
        errs.append(errors.invalid(f"{p}.subresources", subs, "must be an object"))
    elif (
        isinstance(subs, dict)
        and subs.get("scale") is not None
        and not isinstance(subs["scale"], dict)
    ):
        errs.append(errors.invalid(f"{p}.subresources.scale", subs["scale"], "must be an object"))
    schema = v.get("schema")
    if schema is not None and (
        not isinstance(schema, dict) or not isinstance(schema.get("openAPIV3Schema", {}), dict)
    ):
        errs.append(errors.invalid(f"{p}.schema.openAPIV3Schema", schema, "must be an object"))
    columns = v.get("additionalPrinterColumns") or []
    if not isinstance(columns, list):
        errs.append(errors.invalid(f"{p}.additionalPrinterColumns", columns, "must be a list"))
        columns = []
    for j, c in enumerate(columns):
        if not isinstance(c, dict) or not c.get("name") or not c.get("jsonPath"):
            errs.append(errors.required(f"{p}.additionalPrinterColumns[{j}].jsonPath"))
    fields = v.get("selectableFields") or []
    if not isinstance(fields, list) or not all(
        isinstance(f, dict) and isinstance(f.get("jsonPath"), str) for f in fields
    ):
        errs.append(errors.invalid(f"{p}.selectableFields", fields, "each needs a jsonPath"))
    return errs


def resource_types(crd: JsonObject) -> list[ResourceType]:
    spec = crd["spec"]
    names = spec["names"]
    out = []
    for v in spec["versions"]:
        if not v.get("served", True):
            continue
        subs = v.get("subresources") or {}
        scale = subs.get("scale")
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        columns = tuple(
            PrinterColumn(
                c["name"],
                c.get("type", "string"),
                c["jsonPath"],
                c.get("description", ""),
                int(c.get("priority", 0)),
                c.get("format", ""),
            )
            for c in v.get("additionalPrinterColumns") or ()
        )
        out.append(
            ResourceType(
                group=spec["group"],
                version=v["name"],
                plural=names["plural"],
                kind=names["kind"],
                namespaced=spec["scope"] == "Namespaced",
                singular=names.get("singular") or names["kind"].lower(),
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                status="status" in subs,
                scale=ScalePaths(
                    scale["specReplicasPath"],
                    scale["statusReplicasPath"],
                    scale.get("labelSelectorPath"),
                )
                if isinstance(scale, dict)
                else None,
                strategic=False,
                patch_meta=strategic_merge.GENERIC,
                schema=schema,
                printer_columns=columns,
                selectable_fields=tuple(
                    f["jsonPath"].lstrip(".") for f in v.get("selectableFields") or ()
                ),
                return_deleted_object=True,
                custom=True,
                storage_version=bool(v.get("storage")),
                crd_name=crd["metadata"]["name"],
            )
        )
    return out


def established_status(crd: JsonObject, now: str) -> JsonObject:
    names = dict(crd["spec"]["names"])
    names.setdefault("singular", names["kind"].lower())
    names.setdefault("listKind", names["kind"] + "List")
    stored = [v["name"] for v in crd["spec"]["versions"] if v.get("storage")]
    previous = (crd.get("status") or {}).get("storedVersions") or []
    return {
        "acceptedNames": names,
        "conditions": [
            {
                "type": "NamesAccepted",
                "status": "True",
                "reason": "NoConflicts",
                "message": "no conflicts found",
                "lastTransitionTime": now,
            },
            {
                "type": "Established",
                "status": "True",
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
                "lastTransitionTime": now,
            },
        ],
        "storedVersions": sorted(set(previous) | set(stored)),
    }
