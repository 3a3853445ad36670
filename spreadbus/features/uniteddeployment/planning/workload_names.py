"""The name a subset workload is created with.

Kruise creates subset workloads with ``generateName`` and lets the API server pick a random
suffix. A planner's create plan must be the same decision whichever planner makes it and however
often it is made again (a replayed log, a new leader, a lost answer), or two workloads could be
created for one subset. So the suffix is derived, not drawn: five characters of Kubernetes' name
suffix alphabet taken from a hash of the UnitedDeployment's uid and the subset's name. A UD
deleted and created again under the same name gets a new uid, so its workloads new names, and
the old ones, still being deleted, never stand in the way.
"""

from __future__ import annotations

import hashlib
from typing import Final

SUFFIX_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
"""Kubernetes' ``rand.String`` alphabet (no vowels, no look-alike digits)."""
SUFFIX_LENGTH: Final = 5
MAX_PREFIX: Final = 63 - SUFFIX_LENGTH
"""The API server cuts ``generateName`` to 58 characters before adding its five."""


def suffix(ud_uid: str, subset: str) -> str:
    digest = hashlib.sha256(f"{ud_uid}/{subset}".encode()).digest()
    return "".join(SUFFIX_ALPHABET[b % len(SUFFIX_ALPHABET)] for b in digest[:SUFFIX_LENGTH])


def subset_workload_name(generate_name: str, ud_uid: str, subset: str) -> str:
    """``generateName`` (cut as the API server cuts it) followed by the derived suffix."""
    return generate_name[:MAX_PREFIX] + suffix(ud_uid, subset)
