"""UnitedDeployment limits: absurd objects are refused with one error naming the field."""

from __future__ import annotations

import json
import string

from hypothesis import given
from hypothesis import strategies as st

from kubesemantics.annotation_size import TOTAL_ANNOTATION_SIZE_LIMIT
from kubesemantics.qualified_names import is_dns1123_label
from spreadbus.features.uniteddeployment.core.rendering import SUBSET_PATCH_ANNOTATION
from spreadbus.features.uniteddeployment.core.revision import go_json
from spreadbus.features.uniteddeployment.core.validation import MAX_SUBSETS
from tests.uniteddeployment.test_validation_rules import JSON, SUBSETS, base, triples

TOO_LONG = ("Too" "Long", f"may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes")


def with_subsets(count: int, **fields: object) -> JSON:
    ud = base()
    ud["spec"]["replicas"] = count
    ud["spec"]["topology"]["subsets"] = [{"name": f"s{i}", **fields} for i in range(count)]
    ud["spec"]["updateStrategy"] = {"type": "Manual"}
    return ud


def test_a_hundred_subsets_are_allowed() -> None:
    assert triples(with_subsets(MAX_SUBSETS, replicas=1)) == []


def test_more_subsets_are_one_error_and_their_items_are_not_judged() -> None:
    ud = with_subsets(10_000, replicas="x")  # every item is bad as well
    ud["spec"]["topology"]["subsets"].append(7)
    ud["spec"]["updateStrategy"] = {"type": "Manual",
                                    "manualUpdate": {"partitions": {"s3": 1}}}
    assert triples(ud) == [(SUBSETS, "TooMany", "must have at most 100 items")]


@given(st.integers(min_value=0, max_value=2**31 - 1))
def test_replicas_within_int32_are_allowed(replicas: int) -> None:
    ud = base()
    ud["spec"]["replicas"] = replicas
    ud["spec"]["topology"]["subsets"] = [{"name": "subset-a", "replicas": 0}, {"name": "b"}]
    assert triples(ud) == []


@given(st.integers(min_value=2**31, max_value=2**70))
def test_replicas_beyond_int32_are_refused(replicas: int) -> None:
    ud = base()
    ud["spec"]["replicas"] = replicas
    assert triples(ud) == [
        ("spec.replicas", "Invalid", "must be less than or equal to 2147483647")]


def test_the_attacks_replicas_the_history_limit_and_a_partition_are_held_to_int32() -> None:
    ud = base()
    ud["spec"]["replicas"] = 9223372036854775807
    ud["spec"]["revisionHistoryLimit"] = 2**31
    ud["spec"]["updateStrategy"]["manualUpdate"]["partitions"]["subset-a"] = -(2**31) - 1
    assert triples(ud) == [
        ("spec.replicas", "Invalid", "must be less than or equal to 2147483647"),
        ("spec.updateStrategy.manualUpdate.partitions.subset-a", "Invalid",
         "must be greater than or equal to -2147483648"),
        ("spec.revisionHistoryLimit", "Invalid", "must be less than or equal to 2147483647"),
    ]


def test_subset_replicas_beyond_int32_are_refused_on_their_own_field() -> None:
    ud = base()
    ud["spec"]["topology"]["subsets"] = [
        {"name": "a", "minReplicas": 0, "maxReplicas": 2**63 - 1}, {"name": "b"}]
    ud["spec"]["updateStrategy"] = {"type": "Manual"}
    assert (f"{SUBSETS}[0].maxReplicas", "Invalid",
            "subset replicas (9223372036854775807) is out of the int32 range") in triples(ud)


NAME_ERROR = (
    "invalid subset name must be no more than 63 characters, a lowercase RFC 1123 label must "
    "consist of lower case alphanumeric characters or '-', and must start and end with an "
    "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")


def named(name: str) -> JSON:
    ud = base()
    ud["spec"]["topology"]["subsets"][2]["name"] = name
    return ud


def test_a_megabyte_subset_name_is_refused_without_echoing_it() -> None:
    assert triples(named("a" * 1024 * 1024 + "-")) == [
        (f"{SUBSETS}[2].name", "Invalid", NAME_ERROR)]


def test_a_subset_name_with_nul_is_refused() -> None:
    [(field, kind, message)] = triples(named("subset\x00c"))
    assert (field, kind) == (f"{SUBSETS}[2].name", "Invalid")
    assert message.startswith("invalid subset name a lowercase RFC 1123 label must")


@given(st.text(string.ascii_lowercase + string.digits + "-", min_size=1, max_size=70)
       | st.text(min_size=1, max_size=8))
def test_a_subset_name_is_allowed_exactly_when_it_is_a_dns_label(name: str) -> None:
    names = {"subset-a", "subset-b"}
    errors = [e for e in triples(named(name)) if e[0] == f"{SUBSETS}[2].name"]
    if name in names:
        return  # a duplicate, reported as one
    assert (errors == []) == (is_dns1123_label(name) == [])


def patched(patch: JSON, template_annotations: dict[str, str] | None = None) -> JSON:
    ud = base()
    ud["spec"]["topology"]["subsets"][1]["patch"] = patch
    if template_annotations is not None:
        template = ud["spec"]["template"]["deploymentTemplate"]
        template["metadata"]["annotations"] = template_annotations
    return ud


def annotation_patch(value: str) -> JSON:
    return {"metadata": {"annotations": {"note": value}}}


def _padding_for_the_limit(template: dict[str, str]) -> int:
    """The length of ``note``'s value that makes the subset workload's annotations exactly the
    limit: the template's, plus the subset-patch annotation holding the patch as JSON."""
    empty = len(go_json(annotation_patch("")).encode())
    fixed = sum(len(k) + len(v) for k, v in template.items())
    return TOTAL_ANNOTATION_SIZE_LIMIT - fixed - len(SUBSET_PATCH_ANNOTATION) - empty


def test_a_patch_whose_workload_annotations_reach_the_limit_is_allowed_one_byte_more_not() -> None:
    template = {"team": "payments"}
    room = _padding_for_the_limit(template)
    assert triples(patched(annotation_patch("x" * room), template)) == []
    assert triples(patched(annotation_patch("x" * (room + 1)), template)) == [
        (f"{SUBSETS}[1].patch", *TOO_LONG)]


def test_bytes_are_counted_not_characters() -> None:
    room = _padding_for_the_limit({})
    # "é" is two bytes: half as many characters fill the same room.
    assert triples(patched(annotation_patch("é" * (room // 2)))) == []
    assert triples(patched(annotation_patch("é" * (room // 2 + 1)))) == [
        (f"{SUBSETS}[1].patch", *TOO_LONG)]


def test_the_pods_annotations_count_the_templates_and_the_patchs() -> None:
    ud = base()
    pod = ud["spec"]["template"]["deploymentTemplate"]["spec"]["template"]
    pod["metadata"]["annotations"] = {"big": "x" * (TOTAL_ANNOTATION_SIZE_LIMIT // 2)}
    ud["spec"]["topology"]["subsets"][0]["patch"] = annotation_patch(
        "y" * (TOTAL_ANNOTATION_SIZE_LIMIT // 2))
    assert triples(ud) == [(f"{SUBSETS}[0].patch", *TOO_LONG)]
    # The same patch replacing the template's annotation keeps the pods within the limit.
    ud["spec"]["topology"]["subsets"][0]["patch"] = {"metadata": {"annotations": {
        "big": "y" * (TOTAL_ANNOTATION_SIZE_LIMIT // 2)}}}
    assert triples(ud) == []


def test_a_template_over_the_limit_is_one_error_at_the_template() -> None:
    ud = patched(annotation_patch("small"), {"huge": "x" * TOTAL_ANNOTATION_SIZE_LIMIT})
    assert triples(ud) == [
        ("spec.template.deploymentTemplate.metadata.annotations", *TOO_LONG)]


def test_a_patch_that_is_no_json_object_is_left_to_its_type_error() -> None:
    ud = patched(annotation_patch("ok"))
    ud["spec"]["topology"]["subsets"][1]["patch"] = json.dumps({"a": 1})
    assert [e[0] for e in triples(ud)] == [f"{SUBSETS}[1].patch"]
