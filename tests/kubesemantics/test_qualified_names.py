"""Name checks end where Go's regular expressions end: a final newline is not a name."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesemantics.qualified_names import (
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
)

CHECKS = [is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
@given(st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?\Z"), st.sampled_from(["\n", "\x00"]))
def test_a_valid_name_with_a_newline_or_nul_after_it_is_refused(
    check: Callable[[str], list[str]], name: str, tail: str
) -> None:
    assert check(name) == []
    assert check(name + tail) != []
