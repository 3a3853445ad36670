"""The UnitedDeployment's revisions: what a ControllerRevision holds and what it is called.

Only ``spec.template`` makes a revision (replicas, subsets, partitions never do). The revision's
data is the strategic merge patch ``{"spec":{"template":{...,"$patch":"replace"}}}`` as Kruise
writes it: the UD is marshalled, unmarshalled into generic maps and the patch marshalled again
with Go's ``encoding/json``. That last step fixes the bytes: map keys sorted by their UTF-8 bytes
at every depth, no spaces, ``<``, ``>``, ``&``, U+2028 and U+2029 escaped, every number printed as
the float64 it was decoded to. :func:`go_json` reproduces that encoding.

The name comes from Kubernetes' controller history: 32-bit FNV-1 (not 1a) over the data, then the
decimal digits of the collision count (Kruise always passes one, 0 until a clash), the hash's
decimal form mapped character by character through ``rand.SafeEncodeString``'s alphabet, and
``<ud-name>-<hash>`` with the name cut to 223 bytes.

Kruise marshals the typed Go struct first, which drops fields its types do not know and writes
some zero values (``"creationTimestamp":null`` in object metadata, ``"resources":{}`` in
containers); the template is used here as stored. Two equal templates always get the same name
and the name changes exactly when the template does, which is what the controller relies on; the
names equal Kruise's for templates already in that typed shape.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from spreadbus.features.uniteddeployment.core.model import UnitedDeployment

SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
HASH_LABEL = "controller.kubernetes.io/hash"
_FNV32_OFFSET = 0x811C9DC5
_FNV32_PRIME = 0x01000193
_NAME_PREFIX_MAX = 223


def revision_data(template: Mapping[str, Any]) -> bytes:
    """The ControllerRevision's ``data`` for a UD whose ``spec.template`` is ``template``."""
    patch_template = {**template, "$patch": "replace"}
    return go_json({"spec": {"template": patch_template}}).encode()


def fnv1_32(data: bytes) -> int:
    """FNV-1 (multiply, then xor), as Go's ``hash/fnv.New32``."""
    value = _FNV32_OFFSET
    for byte in data:
        value = (value * _FNV32_PRIME) & 0xFFFFFFFF
        value ^= byte
    return value


def safe_encode(text: str) -> str:
    """``rand.SafeEncodeString``: each character by its code point, modulo the alphabet."""
    return "".join(SAFE_ALPHABET[ord(char) % len(SAFE_ALPHABET)] for char in text)


def revision_hash(data: bytes, collision_count: int | None) -> str:
    """``history.HashControllerRevision``: the safe-encoded FNV-1 of data and collision count."""
    probe = b"" if collision_count is None else str(collision_count).encode()
    return safe_encode(str(fnv1_32(data + probe)))


def revision_name(prefix: str, hash_: str) -> str:
    """``history.ControllerRevisionName``: ``prefix-hash``, the prefix cut to 223 bytes."""
    raw = prefix.encode()
    if len(raw) > _NAME_PREFIX_MAX:
        prefix = raw[:_NAME_PREFIX_MAX].decode(errors="ignore")
    return f"{prefix}-{hash_}"


def ud_revision_name(ud: UnitedDeployment, collision_count: int | None = None) -> str:
    """The revision the UD's current template is recorded as.

    The collision count defaults to ``status.collisionCount``, or 0 when unset: Kruise always hashes
    with a count, so even the first revision's hash covers the digit ``0``.
    """
    if collision_count is None:
        collision_count = ud.status.collision_count or 0
    return revision_name(ud.name, revision_hash(revision_data(ud.template), collision_count))


# --- Go's encoding/json of decoded JSON -----------------------------------------------------------

_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\b": "\\b",
    "\f": "\\f",
}
_HTML_AND_SEPARATORS = {"<", ">", "&", "\u2028", "\u2029"}


def go_json(value: object) -> str:
    """``json.Marshal`` of a value decoded into ``interface{}`` (maps, slices, float64, ...)."""
    parts: list[str] = []
    _encode(value, parts)
    return "".join(parts)


def _encode(value: object, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int | float):
        out.append(go_float(float(value)))
    elif isinstance(value, str):
        out.append(go_string(value))
    elif isinstance(value, Mapping):
        out.append("{")
        for index, key in enumerate(sorted(value, key=lambda k: str(k).encode())):
            if index:
                out.append(",")
            out.append(go_string(str(key)))
            out.append(":")
            _encode(value[key], out)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _encode(item, out)
        out.append("]")
    else:
        raise TypeError(f"not a decoded JSON value: {type(value).__name__}")


def go_string(text: str) -> str:
    out = ['"']
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char < " " or char in _HTML_AND_SEPARATORS:
            out.append(f"\\u{ord(char):04x}")
        elif "\ud800" <= char <= "\udfff":
            out.append("\ufffd")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def go_float(number: float) -> str:
    """A float64 as ``encoding/json`` prints it: shortest digits, ``e`` only below 1e-6 or from
    1e21, a negative exponent without its leading zero (``1e-7``)."""
    if math.isnan(number) or math.isinf(number):
        raise ValueError(f"json: unsupported value: {number}")
    shortest = Decimal(repr(number)).normalize()
    magnitude = abs(number)
    if magnitude == 0 or 1e-6 <= magnitude < 1e21:
        return format(shortest, "f")
    sign, digits, exponent = shortest.as_tuple()
    assert isinstance(exponent, int)
    mantissa = str(digits[0]) + ("." + "".join(map(str, digits[1:])) if len(digits) > 1 else "")
    power = exponent + len(digits) - 1
    power_text = f"-{-power}" if power < 0 else f"+{power:02d}"
    return ("-" if sign else "") + mantissa + "e" + power_text
