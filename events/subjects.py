"""NATS subjects for every message, and the one reversible escape that makes any name a token.

NATS splits subjects on ``.`` and gives ``*`` and ``>`` wildcard meaning; whitespace and empty
tokens are forbidden. Kubernetes names may contain ``.`` (DNS subdomains) and cluster-scoped
objects have no namespace, so every variable token goes through :func:`escape`:

- ``[A-Za-z0-9-]`` pass through unchanged, so ordinary names stay readable in ``nats sub``;
- every other byte of the UTF-8 encoding becomes ``%XX`` (upper-case hex), ``%`` and ``_`` included;
- the empty string becomes ``_``, which never appears unescaped, so the mapping is reversible.

Subject layout (``<x>`` is an escaped token, ``<group>`` is ``_`` for the core API group)::

    kube.obs.<cluster>.<group>.<resource>.<namespace>.<name>   Observation
    kube.sync.<cluster>.<group>.<resource>                     SyncMarker
    plan.<cluster>.<verb>.<group>.<resource>.<namespace>.<name> Plan
    outcome.<cluster>.<verb>.<group>.<resource>.<namespace>.<name> Outcome
    admission.<cluster>.<namespace>.<workload>                 Admission
    history.pod.<cluster>.<namespace>.<name>                   PodLifecycle
    history.status.<cluster>.<group>.<resource>.<namespace>.<name> StatusChange
    budget.spend.<member>.<namespace>                          a member's spend on a host budget
    budget.answer.<member>.<replica>.<request>                 its answer

A subscriber wanting every Deployment change of cluster ``east`` uses
``kube.obs.east.apps.deployments.>``.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

_PLAIN = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-")
_PLAIN_TOKEN: Final = re.compile(r"[A-Za-z0-9-]+")
_ASCII_ESCAPES: Final = {c: chr(c) if c in _PLAIN else f"%{c:02X}" for c in range(128)}
_HEX = frozenset(b"0123456789ABCDEF")
_EMPTY = "_"

OBSERVATIONS = "kube.obs"
SYNC = "kube.sync"
PLANS = "plan"
OUTCOMES = "outcome"
ADMISSIONS = "admission"
HISTORY = "history"
BUDGET_SPEND = "budget.spend"
BUDGET_ANSWER = "budget.answer"


class SubjectError(ValueError):
    """A subject or token does not follow the layout above."""


def escape(value: str) -> str:
    """Turn any string into one valid NATS token, reversibly.

    Called for every key the planner reads, so the common cases stay in C: a plain name is one
    regular-expression match, an ASCII one a single ``str.translate``.
    """
    if not value:
        return _EMPTY
    if _PLAIN_TOKEN.fullmatch(value):
        return value
    if value.isascii():
        return value.translate(_ASCII_ESCAPES)
    return "".join(chr(b) if b in _PLAIN else f"%{b:02X}" for b in value.encode("utf-8"))


def unescape(token: str) -> str:
    """Inverse of :func:`escape`; raises :class:`SubjectError` on a token escape never makes."""
    if token == _EMPTY:
        return ""
    if _PLAIN_TOKEN.fullmatch(token):  # most names: escape left them as they are
        return token
    if not token or not token.isascii():
        raise SubjectError(f"not an escaped token: {token!r}")
    data = token.encode("ascii")
    raw = bytearray()
    i = 0
    while i < len(data):
        byte = data[i]
        if byte in _PLAIN:
            raw.append(byte)
            i += 1
            continue
        hex_part = data[i + 1 : i + 3]
        if byte != 0x25 or len(hex_part) != 2 or not set(hex_part) <= _HEX:  # 0x25 is '%'
            raise SubjectError(f"bad escape in token {token!r}")
        raw.append(int(hex_part, 16))
        i += 3
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SubjectError(f"escaped token is not UTF-8: {token!r}") from exc


class ObjectSubject(NamedTuple):
    """The parts an observation, plan or outcome subject names."""

    cluster: str
    group: str
    resource: str
    namespace: str
    name: str


def observation(cluster: str, group: str, resource: str, namespace: str, name: str) -> str:
    return ".".join(
        (
            OBSERVATIONS,
            escape(cluster),
            escape(group),
            escape(resource),
            escape(namespace),
            escape(name),
        )
    )


def sync(cluster: str, group: str, resource: str) -> str:
    return ".".join((SYNC, escape(cluster), escape(group), escape(resource)))


def plan(cluster: str, verb: str, group: str, resource: str, namespace: str, name: str) -> str:
    return _verb_subject(PLANS, cluster, verb, group, resource, namespace, name)


def outcome(cluster: str, verb: str, group: str, resource: str, namespace: str, name: str) -> str:
    return _verb_subject(OUTCOMES, cluster, verb, group, resource, namespace, name)


def admission(cluster: str, namespace: str, workload: str) -> str:
    return ".".join((ADMISSIONS, escape(cluster), escape(namespace), escape(workload)))


def pod_history(cluster: str, namespace: str, name: str) -> str:
    return ".".join((HISTORY, "pod", escape(cluster), escape(namespace), escape(name)))


def status_history(cluster: str, group: str, resource: str, namespace: str, name: str) -> str:
    tokens = (cluster, group, resource, namespace, name)
    return ".".join((HISTORY, "status", *(escape(t) for t in tokens)))


def _verb_subject(
    prefix: str, cluster: str, verb: str, group: str, resource: str, namespace: str, name: str
) -> str:
    tokens = (cluster, verb, group, resource, namespace, name)
    return ".".join((prefix, *(escape(t) for t in tokens)))


def parse_observation(subject: str) -> ObjectSubject:
    """Split ``kube.obs.…`` back into its unescaped parts."""
    tokens = subject.split(".")
    if len(tokens) != 7 or tokens[0] != "kube" or tokens[1] != "obs":
        raise SubjectError(f"not an observation subject: {subject!r}")
    parts = [unescape(t) for t in tokens[2:]]
    return ObjectSubject(*parts)
