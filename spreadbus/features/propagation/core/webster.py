"""Webster's (Sainte-Laguë) apportionment as Karmada divides replicas since v1.16.

Read from Karmada's ``pkg/util/helper/webstermethod.go`` and ``pkg/util/helper/binding.go``:
each of ``seats`` seats goes to the party with the highest ``votes / (2 * seats + 1)``; on an
exact tie (Go compares the float64 quotients, as Python's ``/`` on ints does) the party with
fewer seats wins, then the name: ascending, or descending when the FNV-1a 32-bit hash of the
resource's uid is odd (an empty uid is ascending). Ties are total, so the outcome does not depend
on the order of the input; the result lists every party by name, those without a seat too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import msgspec

_FNV_OFFSET: Final = 2166136261
_FNV_PRIME: Final = 16777619


class Party(msgspec.Struct, frozen=True):
    name: str
    seats: int


def fnv1a32(data: bytes) -> int:
    value = _FNV_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return value


def names_descend(uid: str) -> bool:
    """Whether a tie goes to the greater name for this resource."""
    return bool(uid) and fnv1a32(uid.encode()) & 1 == 1


def allocate(seats: int, votes: Mapping[str, int], initial: Mapping[str, int] | None = None,
             uid: str = "") -> list[Party]:
    """Give ``seats`` more seats on top of ``initial`` (a party there without votes has none)."""
    have = dict(initial or {})
    weight = {name: 0 for name in have}
    weight.update(votes)
    for name in weight:
        have.setdefault(name, 0)
    if not weight:
        return []
    descend = names_descend(uid)

    def better(a: str, b: str) -> bool:
        pa = weight[a] / (2 * have[a] + 1)
        pb = weight[b] / (2 * have[b] + 1)
        if pa != pb:
            return pa > pb
        if have[a] != have[b]:
            return have[a] < have[b]
        return a > b if descend else a < b

    for _ in range(max(seats, 0)):
        winner = ""
        for name in weight:
            if not winner or better(name, winner):
                winner = name
        have[winner] += 1
    return [Party(name=name, seats=have[name]) for name in sorted(weight)]
