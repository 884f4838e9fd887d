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
def test_invalid_plan_is_rejected_at_the_expected_position(case: dict) -> None:
    assert "at" in case, f"{case['id']}: the development split gives every invalid plan its position"
    problem = check_invalid(case)
    assert problem is None, f"{case['id']}: {problem}"


@pytest.mark.parametrize("at", ["1:114", "1:116", "2:115"])
def test_an_invalid_plan_rejected_at_another_position_fails_its_case(at: str) -> None:
    case = next(c for c in INVALID if c["id"] == "invalid-002")  # rejected at 1:115
    problem = check_invalid(case | {"at": at})
    assert problem is not None and problem.startswith(f"rejected at 1:115, expected at {at}: ")


def test_a_case_without_a_position_passes_with_one_inside_the_plan() -> None:
    case = next(c for c in INVALID if c["id"] == "invalid-002")
    assert check_invalid({k: v for k, v in case.items() if k != "at"}) is None
