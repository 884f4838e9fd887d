"""Every Siddhi conformance case of the development split, through `cepheus run` and
`cepheus validate`. A failing case fails the suite: there is no skip list."""

from __future__ import annotations

import pytest

from tests.support.conformance import check_case, check_invalid, load_cases

CASES = load_cases("dev.jsonl")
INVALID = load_cases("dev-invalid.jsonl")


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_conformance_case(case: dict) -> None:
    problem = check_case(case)
    assert problem is None, f"{case['id']} ({case['source'].split()[-1]}): {problem}"


@pytest.mark.parametrize("case", INVALID, ids=[c["id"] for c in INVALID])
def test_invalid_plan_is_rejected_with_a_position(case: dict) -> None:
    problem = check_invalid(case)
    assert problem is None, f"{case['id']}: {problem}"
