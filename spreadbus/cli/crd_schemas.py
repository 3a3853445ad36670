"""The structural schemas of the installation's CRDs, read from ``deploy/crds``.

``spreadbus validate`` judges unknown fields against the same files the API server is given, so
the schema is never restated in code. A copy of spreadbus installed without its ``deploy/``
directory has no schemas unless ``--crds`` names where they are.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from kubesemantics.documents import DocumentError, parse_documents
from spreadbus.cli.offline_input import InputError

DEFAULT_DIR: Final = Path(__file__).resolve().parents[2] / "deploy" / "crds"

SchemaKey = tuple[str, str, str]
"""(API group, kind, version)."""
SchemaMap = Mapping[SchemaKey, Mapping[str, Any]]


def schemas_of(crd: Mapping[str, Any]) -> dict[SchemaKey, Mapping[str, Any]]:
    """Each served version's ``openAPIV3Schema`` of one CRD."""
    spec = crd.get("spec")
    if crd.get("kind") != "CustomResourceDefinition" or not isinstance(spec, Mapping):
        return {}
    group, names = spec.get("group"), spec.get("names")
    kind = names.get("kind") if isinstance(names, Mapping) else None
    out: dict[SchemaKey, Mapping[str, Any]] = {}
    for version in spec.get("versions") or ():
        if not isinstance(version, Mapping) or not version.get("served", True):
            continue
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if isinstance(group, str) and isinstance(kind, str) and isinstance(schema, Mapping):
            out[(group, kind, str(version.get("name")))] = schema
    return out


@functools.cache
def read_schemas(directory: Path) -> SchemaMap:
    """Every schema of every CRD in ``directory``'s YAML files; none when it does not exist.
    Read once per process: the files are part of the installation, not of the input."""
    out: dict[SchemaKey, Mapping[str, Any]] = {}
    if not directory.is_dir():
        return out
    for path in sorted(directory.glob("*.yaml")):
        try:
            documents = parse_documents(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, DocumentError) as exc:
            raise InputError(str(exc), file=str(path)) from exc
        for crd in documents:
            out.update(schemas_of(crd))
    return out
