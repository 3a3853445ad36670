"""A member's spend on a budget of the host: what crosses the bus, and who may ask for what.

A pod of a member's copy of a propagated workload is covered by the host's budgets over the
template, which count every member's pods (:mod:`..planning.member_copies`). The budget's entry
lives once, in the hub's bucket: a member's webhook does not spend on it itself, it asks the
host's webhook (``budget.spend.<member>.<namespace>``), which decides and spends in the same
compare-and-set transaction as for a host pod, so members' spends interleave as replicas' do.

The member names itself only by the subject its leaf link may publish (its own); the answer goes
only to a reply subject under ``budget.answer.<member>.``, which only that member's leaf link
receives. The host believes the member's account of its own pod (a member can delete its own
pods anyway), but checks that the copy it names is one the host binds: a member cannot spend a
budget over a template it does not run a copy of by naming a binding it invented.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

import msgspec

from events import subjects
from kubesemantics.group_version import api_group
from kubesemantics.lenient_json import as_map, as_str
from spreadbus.features.podunavailablebudget.core import pod_health
from spreadbus.features.podunavailablebudget.core.admission import update_operation
from spreadbus.features.podunavailablebudget.core.model import (
    NO_PROTECT_ANNOTATION,
    RELATED_PUB_ANNOTATION,
)
from spreadbus.features.podunavailablebudget.core.workloads import Workloads

JSON = dict[str, Any]

BINDING_NAME: Final = "resourcebinding.karmada.io/name"
BINDING_NAMESPACE: Final = "resourcebinding.karmada.io/namespace"
COPY_RESOURCES: Final = {
    ("apps", "Deployment"): "deployments",
    ("apps", "StatefulSet"): "statefulsets",
    ("apps.kruise.io", "CloneSet"): "clonesets",
}
"""The copy kinds a host budget counts the pods of (as :mod:`..planning.member_copies`)."""
QUEUE: Final = "budget-spend"
"""A cluster's webhook replicas answer spends as one queue group (this, then the cluster):
each spend is decided once."""


class CopyOf(msgspec.Struct, frozen=True, kw_only=True):
    """The member's copy a pod belongs to, and the binding that placed it."""

    group: str
    kind: str
    name: str
    binding: str


class SpendRequest(msgspec.Struct, frozen=True, kw_only=True):
    operation: Literal["DELETE", "EVICT", "UPDATE"]
    namespace: str
    pod: JSON
    """The pod as the member's review carries it (its view's copy for an eviction)."""
    old_pod: JSON | None = None
    """The stored pod of an UPDATE."""
    replicaset: JSON | None = None
    """The pod's ReplicaSet as the member sees it, which names its Deployment copy."""
    copy: CopyOf
    dry_run: bool = False


class SpendAnswer(msgspec.Struct, frozen=True, kw_only=True):
    allowed: bool
    code: int = 200
    reason: str = ""
    message: str = ""


_REQUEST = msgspec.json.Decoder(SpendRequest)
_ANSWER = msgspec.json.Decoder(SpendAnswer)


def spend_subject(member: str, namespace: str) -> str:
    return f"{subjects.BUDGET_SPEND}.{subjects.escape(member)}.{subjects.escape(namespace)}"


def answer_prefix(member: str) -> str:
    """Where the member's answers go; its leaf link receives nothing else of the kind."""
    return f"{subjects.BUDGET_ANSWER}.{subjects.escape(member)}"


def member_of(subject: str) -> str | None:
    """The member a spend subject names (its leaf link can publish no other), or None."""
    tokens = subject.split(".")
    if len(tokens) != 4 or f"{tokens[0]}.{tokens[1]}" != subjects.BUDGET_SPEND:
        return None
    try:
        return subjects.unescape(tokens[2])
    except subjects.SubjectError:
        return None


def answers_to(reply: str, member: str) -> bool:
    """Whether ``reply`` is one of ``member``'s answer subjects: a member that asks for its
    answer elsewhere (another member's) gets none."""
    return reply.startswith(answer_prefix(member) + ".") and ">" not in reply and "*" not in reply


def encode(message: SpendRequest | SpendAnswer) -> bytes:
    return msgspec.json.encode(message)


def decode_request(data: bytes) -> SpendRequest:
    """The request, or ``msgspec.ValidationError``/``DecodeError`` naming the bad field."""
    return _REQUEST.decode(data)


def decode_answer(data: bytes) -> SpendAnswer:
    return _ANSWER.decode(data)


def asks_host(operation: str, pod: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
    """Whether a budget could refuse this at all, read from the pod alone (the core's rule): an
    UPDATE that cannot change the pod's availability, a pod marked not to protect, the deletion
    of a pod already unavailable go free without a round trip to the host, so they go even while
    the member's link is down. An eviction is asked anyway: the pod is the member's view's copy,
    which may be behind."""
    if operation == "UPDATE":
        if old is None or update_operation(dict(old), dict(pod)) is None:
            return False
        pod = old
    if pod_health.annotations_of(dict(pod)).get(NO_PROTECT_ANNOTATION) == "true":
        return False
    return operation == "EVICT" or pod_health.available(dict(pod))


def copy_of(pod: Mapping[str, Any], *, replicaset: JSON | None,
            workload: Callable[[str, str, str], JSON | None]) -> CopyOf | None:
    """The copy a member's pod belongs to, when its workload carries a binding's marks
    (``workload(resource, namespace, name)`` reads the member's view); else None."""
    namespace = as_str(as_map(pod.get("metadata")).get("namespace"))
    found = Workloads([replicaset] if replicaset is not None else []).pod_workload(dict(pod))
    if found is None:
        return None
    resource = COPY_RESOURCES.get((found.group, found.kind))
    if resource is None:
        return None
    copy = workload(resource, namespace, found.name)
    annotations = as_map(as_map(as_map(copy).get("metadata")).get("annotations"))
    binding = as_str(annotations.get(BINDING_NAME))
    if not binding or as_str(annotations.get(BINDING_NAMESPACE)) != namespace:
        return None
    return CopyOf(group=found.group, kind=found.kind, name=found.name, binding=binding)


def bound_by_host(request: SpendRequest, binding: Mapping[str, Any] | None) -> bool:
    """Whether the host's binding of that name places the template the copy is of."""
    resource = as_map(as_map(as_map(binding).get("spec")).get("resource"))
    copy = request.copy
    return (binding is not None
            and api_group(as_str(resource.get("apiVersion"))) == copy.group
            and as_str(resource.get("kind")) == copy.kind
            and as_str(resource.get("name")) == copy.name
            and as_str(resource.get("namespace") or request.namespace) == request.namespace)


def as_host_pod(pod: Mapping[str, Any]) -> JSON:
    """The member's pod as the host's budgets see it: the member's own budget link dropped,
    so the host's budget that covers it is found afresh, never one the member named."""
    metadata = dict(as_map(pod.get("metadata")))
    annotations = {k: v for k, v in as_map(metadata.get("annotations")).items()
                   if k != RELATED_PUB_ANNOTATION}
    metadata["annotations"] = annotations
    return {**pod, "metadata": metadata}
