"""Persisting the store across restarts (``--state FILE``).

The file holds the resourceVersion counter and every object, written atomically on stop and
every few seconds while something changed. Watch history is not kept: after a restart every
older resourceVersion is compacted, so clients relist, as they would after an etcd compaction.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from kubesim.apiserver import ApiServer
from tlsserving import write_secret

FORMAT = 1


def save(server: ApiServer, path: Path) -> None:
    store = server.store
    doc: dict[str, Any] = {
        "format": FORMAT,
        "resourceVersion": store.rv,
        "objects": [
            {"group": key[0], "resource": key[1], "items": list(bucket.values())}
            for key, bucket in store.objects.items()
            if bucket
        ],
    }
    write_secret(path, msgspec.json.encode(doc))  # Secrets among the objects


def load(server: ApiServer, path: Path) -> bool:
    """Restore ``path`` into an empty server; False if there is no file yet."""
    if not path.exists():
        return False
    doc = msgspec.json.decode(path.read_bytes())
    if doc.get("format") != FORMAT:
        raise ValueError(f"{path}: unsupported state format {doc.get('format')!r}")
    store = server.store
    store.objects.clear()
    store.by_uid.clear()
    store.dependents.clear()
    crds = []
    for entry in doc["objects"]:
        key = (entry["group"], entry["resource"])
        for obj in entry["items"]:
            store.write(key, obj, "ADDED", None)
            if key == ("apiextensions.k8s.io", "customresourcedefinitions"):
                crds.append(obj)
    for crd in crds:
        server.serve_crd(crd)
    store.history.clear()
    store.rv = int(doc["resourceVersion"])
    store.compacted = store.rv
    return True
