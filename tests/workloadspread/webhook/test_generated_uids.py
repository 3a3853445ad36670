"""Reservation uids of pods admitted without a name: distinct within and across replicas."""

from __future__ import annotations

import itertools
import uuid

from spreadbus.features.workloadspread.admission.admission import generated_uids


def test_uids_of_one_replica_are_distinct_version_4_uuids() -> None:
    uids = list(itertools.islice(generated_uids(), 1000))
    assert len(set(uids)) == len(uids)
    assert {uuid.UUID(uid).version for uid in uids} == {4}
    assert all(str(uuid.UUID(uid)) == uid for uid in uids), "canonical text form"


def test_replicas_draw_uids_no_other_replica_draws() -> None:
    replicas = [list(itertools.islice(generated_uids(), 100)) for _ in range(50)]
    drawn = [uid for uids in replicas for uid in uids]
    assert len(set(drawn)) == len(drawn)
