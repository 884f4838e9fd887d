"""The fault tests' reference is anchored: the engine's uninterrupted run of the rooms plan
equals rows computed by hand, and holds every kind of row (a reference that lost a kind the
way a faulty sink did would let that sink pass)."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.support.rooms import by_hand, readings, uninterrupted


@pytest.mark.parametrize("seed", range(12))
def test_the_reference_run_equals_the_rows_computed_by_hand(seed: int) -> None:
    plan_input = readings(seed)
    rows = uninterrupted(plan_input, 10**12)  # asserts its equality with `by_hand` itself
    kinds = Counter(r[0] for r in rows)
    assert kinds["window"] >= len(plan_input) // 8 and kinds["rise"] > 0 and kinds["change"] > 0, kinds


def test_the_hand_computation_is_not_the_engine_agreeing_with_itself() -> None:
    """A change to one reading changes the rows by hand as the plan says it must."""
    plan_input = [("r0", 0, 10), ("r0", 1, 20), ("r1", 2, 5), ("r0", 3, 15)]
    assert by_hand(plan_input, 0) == [
        ("window", "r0", 1, 30, 2),
        ("window", "r1", 2, 5, 1),
        ("window", "r0", 3, 45, 3),
        ("rise", "r0", 1, 0, 10),  # seq 0's match is spent on seq 1; seq 1 waits for more than 20
    ]  # one bundle: no change rows (the table is empty before it)
