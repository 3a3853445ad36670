"""A reference to an object by ``apiVersion``, ``kind`` and ``name``, as a ``targetRef`` holds it.

Its group is read from the ``apiVersion`` as Kubernetes reads it; the version itself never
decides which object is meant. Features extend it with what their API adds.
"""

from __future__ import annotations

import msgspec

from kubesemantics.group_version import api_group


class TargetRef(msgspec.Struct, frozen=True):
    api_version: str
    kind: str
    name: str

    @property
    def group(self) -> str:
        return api_group(self.api_version)
