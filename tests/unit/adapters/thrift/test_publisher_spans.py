"""The publisher's record of which event positions reached a group: ranges merged as added."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from adapters.thrift.publisher import _Spans

ranges = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 20)).map(lambda t: (t[0], t[0] + t[1])))


@given(ranges, st.integers(0, 80), st.integers(0, 20))
def test_spans_answer_as_the_set_of_their_positions(
    added: list[tuple[int, int]], start: int, size: int
) -> None:
    spans, positions = _Spans(), set[int]()
    for a, b in added:
        spans.add(a, b)
        positions.update(range(a, b))
    end = start + size
    assert spans.total() == len(positions)
    assert spans.overlap(start, end) == len(positions & set(range(start, end)))
    assert spans.covers(start, end) == (set(range(start, end)) <= positions)


def test_touching_ranges_merge_into_one() -> None:
    spans = _Spans()
    for a, b in [(10, 20), (0, 5), (5, 10), (30, 40)]:
        spans.add(a, b)
    assert (spans._starts, spans._ends) == ([0, 30], [20, 40])
