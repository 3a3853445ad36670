"""A subset's ``replicas``, ``minReplicas`` or ``maxReplicas`` read against the UD's total.

Kruise's ``ParseSubsetReplicas`` differs from Kubernetes' ``GetScaledValueFromIntOrPercent``
(:mod:`kubesemantics.intstr`) on purpose: a percentage rounds half up (``floor(total * p / 100 +
0.5)`` in float64, so 25% of 3 is 1 and 50% of 1 is 1), it must lie in [0, 100], a negative integer
is refused, and a percentage needs a total: callers pass ``-1`` for "``spec.replicas`` unset" (the
specific allocator) or ``0`` (the min/max allocators, which thereby scale every percentage to 0).
The percentage is read with ``strconv.ParseInt(s, 10, 32)``, whose error text is part of Kruise's
message and is reproduced here, quoting included.

A value that is neither a JSON integer nor a string cannot reach Kruise (its decoder refuses the
whole object); the tolerant model keeps it, and it is refused here with this project's message so
that the allocators treat it like any other unparsable value.
"""

from __future__ import annotations

import json
import math

from kubesemantics.intstr import is_int

INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)
_UINT32_MAX = 2**32 - 1


class SubsetReplicasError(ValueError):
    """The value cannot be read as a replica count; the message is Kruise's."""


def parse_subset_replicas(ud_replicas: int, value: object) -> int:
    """``value`` (an int or ``"N%"``) as a replica count of ``ud_replicas`` (``-1``: unset)."""
    if is_int(value):
        assert isinstance(value, int)
        if value < 0:
            raise SubsetReplicasError(f"subset replicas ({value}) should not be less than 0")
        if value > INT32_MAX:
            raise SubsetReplicasError(f"subset replicas ({value}) is out of the int32 range")
        return value
    if not isinstance(value, str):
        shown = json.dumps(value, separators=(",", ":"))
        raise SubsetReplicasError(f"subset replicas ({shown}) should be an integer or a string")
    if ud_replicas < 0:
        raise SubsetReplicasError(
            f"subsetReplicas ({value}) should not be string when unitedDeployment replicas is empty"
        )
    if not value.endswith("%"):
        raise SubsetReplicasError(
            f"subset replicas ({value}) only support integer value or percentage value "
            "with a suffix '%'"
        )
    try:
        percent = parse_int32(value[:-1])
    except ValueError as err:
        raise SubsetReplicasError(
            f"subset replicas ({value}) should be correct percentage integer: {err}"
        ) from None
    if percent > 100 or percent < 0:
        raise SubsetReplicasError(f"subset replicas ({value}) should be in range [0, 100]")
    return round_half_up(float(ud_replicas) * float(percent) / 100)


def round_half_up(x: float) -> int:
    return math.floor(x + 0.5)


def parse_int32(text: str) -> int:
    """``strconv.ParseInt(text, 10, 32)``, its errors worded as Go words them.

    Go gives up at the first character that is not a digit (invalid syntax) or as soon as the
    digits so far exceed 32 bits unsigned (out of range), whichever comes first; the int32 bound
    is checked once all digits are read.
    """
    if text == "":
        raise ValueError(_num_error(text, "invalid syntax"))
    digits = text[1:] if text[0] in "+-" else text
    negative = text[0] == "-"
    if digits == "":
        raise ValueError(_num_error(text, "invalid syntax"))
    number = 0
    for char in digits:
        if not "0" <= char <= "9":
            raise ValueError(_num_error(text, "invalid syntax"))
        number = number * 10 + ord(char) - ord("0")
        if number > _UINT32_MAX:
            raise ValueError(_num_error(text, "value out of range"))
    if (not negative and number > INT32_MAX) or (negative and number > -INT32_MIN):
        raise ValueError(_num_error(text, "value out of range"))
    return -number if negative else number


def _num_error(text: str, reason: str) -> str:
    return f"strconv.ParseInt: parsing {go_quote(text)}: {reason}"


_SHORT_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


def go_quote(text: str) -> str:
    """``strconv.Quote``: printable characters as they are, the rest as Go escapes."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[char])
        elif char == " " or (char.isprintable() and not 0xD800 <= code <= 0xDFFF):
            out.append(char)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)
