"""WorkloadSpread limits: absurd subsets are refused with one error naming the field."""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesemantics.annotation_size import TOTAL_ANNOTATION_SIZE_LIMIT
from kubesemantics.qualified_names import is_valid_label_value
from spreadbus.cli import main
from spreadbus.features.workloadspread.core.model import MATCHED_ANNOTATION
from spreadbus.features.workloadspread.core.validation import MAX_SUBSETS, validate_workloadspread
from tests.workloadspread.core.builders import deployment, workloadspread

JSON = dict[str, Any]
TOO_LONG = ("Too" "Long", f"may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes")
LABEL_VALUE_ERR = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
    "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def errs(obj: object, **kwargs: Any) -> list[tuple[str, str, str]]:
    return [(e.field, e.type, e.message) for e in validate_workloadspread(obj, **kwargs)]


def named(*names: str) -> JSON:
    return workloadspread(*({"name": n} for n in names))


def test_a_hundred_subsets_are_allowed() -> None:
    assert errs(named(*(f"s{i}" for i in range(MAX_SUBSETS)))) == []


def test_more_subsets_are_one_error_and_their_items_are_not_judged() -> None:
    ws = named(*("" for _ in range(10_000)))  # every name is bad as well
    assert errs(ws) == [("spec.subsets", "TooMany", "must have at most 100 items")]


def test_kruises_example_names_are_allowed() -> None:
    assert errs(named("subset-a", "ACK", "ECI", "zone_b", "pool.1")) == []


def test_a_megabyte_subset_name_is_refused_without_echoing_it() -> None:
    assert errs(named("a", "x" * 1024 * 1024 + "-")) == [
        ("spec.subsets[1].name", "Invalid",
         f"invalid subset name must be no more than 63 characters, {LABEL_VALUE_ERR}")]


@pytest.mark.parametrize("name", ["subset\x00a", "a/b", "kruise.io/workloadspread-fake-subset-name",
                                  "-a", "a b", "zone\n"])
def test_a_subset_name_no_label_value_could_be_is_refused(name: str) -> None:
    assert errs(named("a", name)) == [
        ("spec.subsets[1].name", "Invalid", f"invalid subset name {LABEL_VALUE_ERR}")]


@given(st.text(string.ascii_letters + string.digits + "-_.", min_size=1, max_size=70)
       | st.text(min_size=1, max_size=8))
def test_a_subset_name_is_allowed_exactly_when_it_is_a_label_value(name: str) -> None:
    errors = [e for e in errs(named("other", name)) if e[0] == "spec.subsets[1].name"]
    if name == "other":
        return  # a duplicate, reported as one
    assert (errors == []) == (is_valid_label_value(name) == [])


def annotated(size: int, template: dict[str, str] | None = None,
              name: str = "a") -> tuple[JSON, JSON]:
    """A spread whose subset patch gives its pods one annotation ``note`` of ``size`` bytes,
    and its workload, whose pod template carries ``template``."""
    patch = {"metadata": {"annotations": {"note": "x" * size}}}
    ws = workloadspread({"name": name, "patch": patch})
    workload = deployment()
    workload["spec"]["template"]["metadata"]["annotations"] = template or {}
    return ws, workload


def matched_size(ws_name: str, subset: str) -> int:
    """What the matched annotation takes at most: a pod admitted without a name carries a uid."""
    uid = "00000000-0000-0000-0000-000000000000"
    value = f'{{"name":"{ws_name}","subset":"{subset}","uid":"{uid}"}}'
    return len(MATCHED_ANNOTATION) + len(value)


def test_a_patch_filling_the_pods_annotations_to_the_limit_is_allowed_one_byte_more_not() -> None:
    template = {"team": "payments"}
    room = TOTAL_ANNOTATION_SIZE_LIMIT - matched_size("ws", "a") - len("team" "payments") - len(
        "note")
    ws, workload = annotated(room, template)
    assert errs(ws, workload=workload) == []
    ws, workload = annotated(room + 1, template)
    assert errs(ws, workload=workload) == [
        ("spec.subsets[0].patch.metadata.annotations", *TOO_LONG)]


def test_without_the_workload_the_matched_annotation_is_still_counted() -> None:
    room = TOTAL_ANNOTATION_SIZE_LIMIT - matched_size("ws", "a") - len("note")
    assert errs(annotated(room)[0]) == []
    assert errs(annotated(room + 1)[0]) == [
        ("spec.subsets[0].patch.metadata.annotations", *TOO_LONG)]


def test_an_annotation_the_patch_removes_is_not_counted() -> None:
    ws, workload = annotated(10, {"big": "x" * TOTAL_ANNOTATION_SIZE_LIMIT})
    ws["spec"]["subsets"][0]["patch"]["metadata"]["annotations"]["big"] = None
    assert errs(ws, workload=workload) == []


def test_the_offline_command_refuses_ten_thousand_subsets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ws.json"
    path.write_text(json.dumps(named(*(f"s{i}" for i in range(10_000)))))
    assert main(["validate", "-f", str(path)]) == 1
    assert "spec.subsets: Too many: must have at most 100 items" in capsys.readouterr().out
