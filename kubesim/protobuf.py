"""Decoding the Kubernetes protobuf request bodies kubectl's typed commands send.

``kubectl create namespace|configmap|secret|deployment``, ``kubectl drain`` (evictions),
``kubectl autoscale`` (HorizontalPodAutoscalers) and ``kubectl auth can-i|whoami`` use
client-go's typed clients, which encode request bodies as ``application/vnd.kubernetes.protobuf``
(the ``k8s\\0`` magic, then a ``runtime.Unknown`` envelope around the object). kubesim decodes
exactly the messages those commands produce into the JSON shape the rest of the server uses, and
answers 415 for anything else. Responses stay JSON, which these clients accept.

The field tables below carry the upstream ``generated.proto`` field numbers. Go encodes every
non-pointer field even when it holds its zero value, and JSON omits those (``omitempty``), so
zero scalars are dropped unless the field is a pointer (``keep``: ``replicas: 0`` must survive).
A field missing from a table is tolerated only when its payload is empty; otherwise the body is
refused rather than silently losing data.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from kubesim import errors

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"


@dataclass(frozen=True, slots=True)
class F:
    """One field: JSON name, wire kind, nested message, and whether zero values are kept."""

    name: str
    kind: str  # string bytes int bool msg map_ss map_sb strings msgs quantity quantity_map skip
    msg: Msg | None = None
    keep: bool = False


@dataclass(frozen=True, slots=True)
class Msg:
    name: str
    fields: dict[int, F] = field(default_factory=dict)


def _m(name: str, fields: dict[int, F]) -> Msg:
    return Msg(name, fields)


OWNER_REFERENCE = _m(
    "OwnerReference",
    {
        1: F("kind", "string"),
        3: F("name", "string"),
        4: F("uid", "string"),
        5: F("apiVersion", "string"),
        6: F("controller", "bool", keep=True),
        7: F("blockOwnerDeletion", "bool", keep=True),
    },
)
OBJECT_META = _m(
    "ObjectMeta",
    {
        1: F("name", "string"),
        2: F("generateName", "string"),
        3: F("namespace", "string"),
        4: F("selfLink", "string"),
        5: F("uid", "string"),
        6: F("resourceVersion", "string"),
        7: F("generation", "int"),
        8: F("creationTimestamp", "skip"),
        9: F("deletionTimestamp", "skip"),
        10: F("deletionGracePeriodSeconds", "int", keep=True),
        11: F("labels", "map_ss"),
        12: F("annotations", "map_ss"),
        13: F("ownerReferences", "msgs", OWNER_REFERENCE),
        14: F("finalizers", "strings"),
    },
)
SELECTOR_REQUIREMENT = _m(
    "LabelSelectorRequirement",
    {
        1: F("key", "string"),
        2: F("operator", "string"),
        3: F("values", "strings"),
    },
)
LABEL_SELECTOR = _m(
    "LabelSelector",
    {
        1: F("matchLabels", "map_ss"),
        2: F("matchExpressions", "msgs", SELECTOR_REQUIREMENT),
    },
)
CONTAINER_PORT = _m(
    "ContainerPort",
    {
        1: F("name", "string"),
        2: F("hostPort", "int"),
        3: F("containerPort", "int"),
        4: F("protocol", "string"),
        5: F("hostIP", "string"),
    },
)
ENV_VAR = _m("EnvVar", {1: F("name", "string"), 2: F("value", "string")})
RESOURCES = _m(
    "ResourceRequirements",
    {
        1: F("limits", "quantity_map"),
        2: F("requests", "quantity_map"),
    },
)
CONTAINER = _m(
    "Container",
    {
        1: F("name", "string"),
        2: F("image", "string"),
        3: F("command", "strings"),
        4: F("args", "strings"),
        5: F("workingDir", "string"),
        6: F("ports", "msgs", CONTAINER_PORT),
        7: F("env", "msgs", ENV_VAR),
        8: F("resources", "msg", RESOURCES),
        13: F("terminationMessagePath", "string"),
        14: F("imagePullPolicy", "string"),
        16: F("stdin", "bool"),
        17: F("stdinOnce", "bool"),
        18: F("tty", "bool"),
        20: F("terminationMessagePolicy", "string"),
    },
)
POD_SPEC = _m(
    "PodSpec",
    {
        2: F("containers", "msgs", CONTAINER),
        3: F("restartPolicy", "string"),
        4: F("terminationGracePeriodSeconds", "int", keep=True),
        5: F("activeDeadlineSeconds", "int", keep=True),
        6: F("dnsPolicy", "string"),
        7: F("nodeSelector", "map_ss"),
        8: F("serviceAccountName", "string"),
        9: F("serviceAccount", "string"),
        10: F("nodeName", "string"),
        11: F("hostNetwork", "bool"),
        12: F("hostPID", "bool"),
        13: F("hostIPC", "bool"),
        16: F("hostname", "string"),
        17: F("subdomain", "string"),
        19: F("schedulerName", "string"),
        20: F("initContainers", "msgs", CONTAINER),
        24: F("priorityClassName", "string"),
    },
)
POD_TEMPLATE = _m(
    "PodTemplateSpec", {1: F("metadata", "msg", OBJECT_META), 2: F("spec", "msg", POD_SPEC)}
)
ROLLING_UPDATE = _m("RollingUpdateDeployment", {})
STRATEGY = _m(
    "DeploymentStrategy", {1: F("type", "string"), 2: F("rollingUpdate", "msg", ROLLING_UPDATE)}
)
DEPLOYMENT_SPEC = _m(
    "DeploymentSpec",
    {
        1: F("replicas", "int", keep=True),
        2: F("selector", "msg", LABEL_SELECTOR),
        3: F("template", "msg", POD_TEMPLATE),
        4: F("strategy", "msg", STRATEGY),
        5: F("minReadySeconds", "int"),
        6: F("revisionHistoryLimit", "int", keep=True),
        7: F("paused", "bool"),
        9: F("progressDeadlineSeconds", "int", keep=True),
    },
)
PRECONDITIONS = _m(
    "Preconditions",
    {1: F("uid", "string", keep=True), 2: F("resourceVersion", "string", keep=True)},
)
DELETE_OPTIONS = _m(
    "DeleteOptions",
    {
        1: F("gracePeriodSeconds", "int", keep=True),
        2: F("preconditions", "msg", PRECONDITIONS),
        3: F("orphanDependents", "bool", keep=True),
        4: F("propagationPolicy", "string", keep=True),
        5: F("dryRun", "strings"),
    },
)

CROSS_VERSION_REFERENCE = _m(
    "CrossVersionObjectReference",
    {1: F("kind", "string"), 2: F("name", "string"), 3: F("apiVersion", "string")},
)
METRIC_TARGET = _m(
    "MetricTarget",
    {
        1: F("type", "string"),
        2: F("value", "quantity"),
        3: F("averageValue", "quantity"),
        4: F("averageUtilization", "int", keep=True),
    },
)
METRIC_IDENTIFIER = _m(
    "MetricIdentifier", {1: F("name", "string"), 2: F("selector", "msg", LABEL_SELECTOR)}
)
METRIC_SPEC = _m(
    "MetricSpec",
    {
        1: F("type", "string"),
        2: F(
            "object",
            "msg",
            _m(
                "ObjectMetricSource",
                {
                    1: F("describedObject", "msg", CROSS_VERSION_REFERENCE),
                    2: F("target", "msg", METRIC_TARGET),
                    3: F("metric", "msg", METRIC_IDENTIFIER),
                },
            ),
        ),
        3: F(
            "pods",
            "msg",
            _m(
                "PodsMetricSource",
                {1: F("metric", "msg", METRIC_IDENTIFIER), 2: F("target", "msg", METRIC_TARGET)},
            ),
        ),
        4: F(
            "resource",
            "msg",
            _m(
                "ResourceMetricSource",
                {1: F("name", "string"), 2: F("target", "msg", METRIC_TARGET)},
            ),
        ),
        5: F(
            "external",
            "msg",
            _m(
                "ExternalMetricSource",
                {1: F("metric", "msg", METRIC_IDENTIFIER), 2: F("target", "msg", METRIC_TARGET)},
            ),
        ),
        7: F(
            "containerResource",
            "msg",
            _m(
                "ContainerResourceMetricSource",
                {
                    1: F("name", "string"),
                    2: F("target", "msg", METRIC_TARGET),
                    3: F("container", "string"),
                },
            ),
        ),
    },
)
SCALING_RULES = _m(
    "HPAScalingRules",
    {
        1: F("selectPolicy", "string"),
        2: F(
            "policies",
            "msgs",
            _m(
                "HPAScalingPolicy",
                {
                    1: F("type", "string"),
                    2: F("value", "int", keep=True),
                    3: F("periodSeconds", "int", keep=True),
                },
            ),
        ),
        3: F("stabilizationWindowSeconds", "int", keep=True),
    },
)
HPA_V2_SPEC = _m(
    "HorizontalPodAutoscalerSpec",
    {
        1: F("scaleTargetRef", "msg", CROSS_VERSION_REFERENCE),
        2: F("minReplicas", "int", keep=True),
        3: F("maxReplicas", "int", keep=True),
        4: F("metrics", "msgs", METRIC_SPEC),
        5: F(
            "behavior",
            "msg",
            _m(
                "HorizontalPodAutoscalerBehavior",
                {1: F("scaleUp", "msg", SCALING_RULES), 2: F("scaleDown", "msg", SCALING_RULES)},
            ),
        ),
    },
)
HPA_V1_SPEC = _m(
    "HorizontalPodAutoscalerSpec",
    {
        1: F("scaleTargetRef", "msg", CROSS_VERSION_REFERENCE),
        2: F("minReplicas", "int", keep=True),
        3: F("maxReplicas", "int", keep=True),
        4: F("targetCPUUtilizationPercentage", "int", keep=True),
    },
)

TOP_LEVEL: dict[str, Msg] = {
    "Namespace": _m(
        "Namespace",
        {
            1: F("metadata", "msg", OBJECT_META),
            2: F("spec", "msg", _m("NamespaceSpec", {1: F("finalizers", "strings")})),
            3: F("status", "skip"),
        },
    ),
    "ConfigMap": _m(
        "ConfigMap",
        {
            1: F("metadata", "msg", OBJECT_META),
            2: F("data", "map_ss"),
            3: F("binaryData", "map_sb"),
            4: F("immutable", "bool", keep=True),
        },
    ),
    "Secret": _m(
        "Secret",
        {
            1: F("metadata", "msg", OBJECT_META),
            2: F("data", "map_sb"),
            3: F("type", "string"),
            4: F("stringData", "map_ss"),
            5: F("immutable", "bool", keep=True),
        },
    ),
    "Deployment": _m(
        "Deployment",
        {
            1: F("metadata", "msg", OBJECT_META),
            2: F("spec", "msg", DEPLOYMENT_SPEC),
            3: F("status", "skip"),
        },
    ),
    "Eviction": _m(
        "Eviction",
        {
            1: F("metadata", "msg", OBJECT_META),
            2: F("deleteOptions", "msg", DELETE_OPTIONS),
        },
    ),
    "DeleteOptions": DELETE_OPTIONS,
    # kubectl autoscale sends autoscaling/v2 first and falls back to v1 (one message name, two
    # versions: keyed by apiVersion too).
    "autoscaling/v2/HorizontalPodAutoscaler": _m(
        "HorizontalPodAutoscaler",
        {
            1: F("metadata", "msg", OBJECT_META),
            2: F("spec", "msg", HPA_V2_SPEC),
            3: F("status", "skip"),
        },
    ),
    "autoscaling/v1/HorizontalPodAutoscaler": _m(
        "HorizontalPodAutoscaler",
        {
            1: F("metadata", "msg", OBJECT_META),
            2: F("spec", "msg", HPA_V1_SPEC),
            3: F("status", "skip"),
        },
    ),
    "SelfSubjectAccessReview": _m(
        "SelfSubjectAccessReview",
        {
            1: F("metadata", "msg", OBJECT_META),
            2: F(
                "spec",
                "msg",
                _m(
                    "SelfSubjectAccessReviewSpec",
                    {
                        1: F(
                            "resourceAttributes",
                            "msg",
                            _m(
                                "ResourceAttributes",
                                {
                                    1: F("namespace", "string"),
                                    2: F("verb", "string"),
                                    3: F("group", "string"),
                                    4: F("version", "string"),
                                    5: F("resource", "string"),
                                    6: F("subresource", "string"),
                                    7: F("name", "string"),
                                    8: F("fieldSelector", "skip"),
                                    9: F("labelSelector", "skip"),
                                },
                            ),
                        ),
                        2: F(
                            "nonResourceAttributes",
                            "msg",
                            _m(
                                "NonResourceAttributes",
                                {
                                    1: F("path", "string"),
                                    2: F("verb", "string"),
                                },
                            ),
                        ),
                    },
                ),
            ),
            3: F("status", "skip"),
        },
    ),
    "SelfSubjectReview": _m(
        "SelfSubjectReview",
        {
            1: F("metadata", "msg", OBJECT_META),
            2: F("status", "skip"),
        },
    ),
}


class ProtobufError(ValueError):
    pass


def _varint(b: bytes, i: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        if i >= len(b):
            raise ProtobufError("truncated varint")
        x = b[i]
        i += 1
        n |= (x & 0x7F) << shift
        shift += 7
        if not x & 0x80:
            return n, i


def _fields(b: bytes) -> list[tuple[int, int, Any]]:
    out: list[tuple[int, int, Any]] = []
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, i = _varint(b, i)
        elif wire == 2:
            length, i = _varint(b, i)
            if i + length > len(b):
                raise ProtobufError("truncated field")
            value, i = b[i : i + length], i + length
        elif wire == 1:
            value, i = b[i : i + 8], i + 8
        elif wire == 5:
            value, i = b[i : i + 4], i + 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _signed(n: int) -> int:
    return n - (1 << 64) if n >= 1 << 63 else n


def _map_entry(raw: bytes) -> tuple[str, bytes]:
    key, value = "", b""
    for number, _, v in _fields(raw):
        if number == 1:
            key = bytes(v).decode()
        elif number == 2:
            value = bytes(v)
    return key, value


def _decode(msg: Msg, raw: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for number, wire, value in _fields(raw):
        f = msg.fields.get(number)
        if f is None:
            if (wire == 0 and value == 0) or (wire == 2 and not value):
                continue
            raise ProtobufError(f"field {number} of {msg.name} is not supported")
        kind = f.kind
        if kind == "skip":
            continue
        if kind == "string":
            text = bytes(value).decode()
            if text or f.keep:
                out[f.name] = text
        elif kind == "bytes":
            out[f.name] = base64.b64encode(bytes(value)).decode()
        elif kind == "int":
            number_value = _signed(int(value))
            if number_value or f.keep:
                out[f.name] = number_value
        elif kind == "bool":
            if value or f.keep:
                out[f.name] = bool(value)
        elif kind == "msg":
            assert f.msg is not None
            out[f.name] = _decode(f.msg, bytes(value))
        elif kind == "quantity":
            out[f.name] = next(
                (bytes(v).decode() for n, _, v in _fields(bytes(value)) if n == 1), ""
            )
        elif kind == "msgs":
            assert f.msg is not None
            out.setdefault(f.name, []).append(_decode(f.msg, bytes(value)))
        elif kind == "strings":
            out.setdefault(f.name, []).append(bytes(value).decode())
        elif kind in ("map_ss", "map_sb", "quantity_map"):
            key, item = _map_entry(bytes(value))
            target = out.setdefault(f.name, {})
            if kind == "map_ss":
                target[key] = item.decode()
            elif kind == "map_sb":
                target[key] = base64.b64encode(item).decode()
            else:
                target[key] = next((bytes(v).decode() for n, _, v in _fields(item) if n == 1), "")
    return out


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf request body; raises a 415 ApiError when unsupported."""
    try:
        if not body.startswith(MAGIC):
            raise ProtobufError("missing the k8s protobuf prefix")
        api_version = kind = ""
        raw = b""
        for number, _, value in _fields(body[len(MAGIC) :]):
            if number == 1:
                for n, _, v in _fields(bytes(value)):
                    if n == 1:
                        api_version = bytes(v).decode()
                    elif n == 2:
                        kind = bytes(v).decode()
            elif number == 2:
                raw = bytes(value)
        msg = TOP_LEVEL.get(kind) or TOP_LEVEL.get(f"{api_version}/{kind}")
        if msg is None:
            raise ProtobufError(f"{kind or 'this kind'} is not supported in protobuf")
        obj = _decode(msg, raw)
    except ProtobufError as e:
        raise errors.unsupported_media_type(
            CONTENT_TYPE, ["application/json", "application/yaml"]
        ) from e
    out: dict[str, Any] = {"apiVersion": api_version, "kind": kind}
    out.update(obj)
    return out
