"""The names a plan puts into URLs are Kubernetes names, and the object read is the one named.

A plan's target and governor become API paths (:func:`spreadbus.runtime.kube_client.
resource_path`). A name that is not one the API server could have given an object (``..``, a
``/``, a ``%``, upper case, empty, too long) can only be a forgery or a fault: the actuator
refuses the plan unsent (:func:`invalid_name`), naming the field. Every kind a feature writes
(pods, workloads, ControllerRevisions, the custom resources) has DNS-subdomain names, so that
is the rule for every object name; namespaces are DNS labels; an API group is a DNS subdomain
(empty for the core group), a version and a resource DNS labels.

:func:`misnamed` checks an object as read against the plan's target, so even a path the server
routed elsewhere could not let a plan write an object it does not name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from events.messages import ObjectRef, Plan
from kubesemantics.group_version import api_group
from kubesemantics.lenient_json import as_map, as_str
from kubesemantics.qualified_names import is_dns1123_label, is_dns1123_subdomain

SHOWN: Final = 64
"""Characters of a refused value quoted in the message (a forged name may be megabytes)."""

Check = Callable[[str], list[str]]


def _optional(check: Check) -> Check:
    """``check``, with the empty string allowed (the core group, a cluster-scoped object)."""
    return lambda value: check(value) if value else []


def _required(check: Check) -> Check:
    return lambda value: check(value) if value else ["Required value"]


_FIELDS: Final[tuple[tuple[str, Check], ...]] = (
    ("group", _optional(is_dns1123_subdomain)),
    ("version", _required(is_dns1123_label)),
    ("resource", _required(is_dns1123_label)),
    ("namespace", _optional(is_dns1123_label)),
    ("name", _required(is_dns1123_subdomain)),
)


def invalid_name(plan: Plan) -> str:
    """Why one of the plan's names cannot be sent (``"target.name: ..."``); ``""``: none."""
    refs = (("target", plan.target),) + (
        (("governor", plan.governor),) if plan.governor is not None else ())
    for where, ref in refs:
        for field, check in _FIELDS:
            value = getattr(ref, field)
            problems = check(value)
            if problems:
                return f"{where}.{field}: Invalid value: {_show(value)}: {'; '.join(problems)}"
    return ""


def misnamed(target: ObjectRef, obj: Mapping[str, Any]) -> str:
    """How the object read differs from the plan's target (API group, namespace, name); ``""``:
    it is that object. The uid is the caller's to compare: a replaced object is not misnamed."""
    metadata = as_map(obj.get("metadata"))
    found = (api_group(as_str(obj.get("apiVersion"))), as_str(metadata.get("namespace")),
             as_str(metadata.get("name")))
    wanted = (target.group, target.namespace, target.name)
    if found == wanted:
        return ""
    return (f"the object read is {as_str(obj.get('kind')) or 'an object'} "
            f"{_where(*found)}, not {target.resource} {_where(*wanted)}")


def _where(group: str, namespace: str, name: str) -> str:
    return (f"{group}/" if group else "") + (f"{namespace}/" if namespace else "") + _show(name)


def _show(value: str) -> str:
    return repr(shown(value))


def shown(value: str, limit: int = SHOWN) -> str:
    """``value`` cut to ``limit`` characters: a forged name of a megabyte is logged as a line."""
    return value if len(value) <= limit else value[:limit] + "..."
