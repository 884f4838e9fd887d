"""`keep_new`, a run of origins at a time, keeps what the record-by-record rule keeps."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from adapters.output import Origin, Run, per_record
from adapters.output.base import check_origins
from adapters.output.rdbms.delivered import keep_new

origins = st.builds(
    Origin, st.sampled_from(["a", "b"]), st.sampled_from(["l1", "l2"]), st.integers(0, 4), st.integers(0, 3)
)
runs = st.lists(st.tuples(st.one_of(st.none(), origins), st.integers(1, 4)), max_size=6)


def one_by_one(
    records: list[int], given: list[Origin | None], marks: dict[str, Origin]
) -> tuple[list[int], dict[str, Origin]]:
    last = dict(marks)
    kept = []
    for record, origin in zip(records, given, strict=True):
        if origin is not None:
            if not origin.follows(last.get(origin.source)):
                continue
            last[origin.source] = origin
        kept.append(record)
    return kept, last


@given(runs, st.dictionaries(st.sampled_from(["a", "b"]), origins))
def test_any_runs_keep_what_the_rule_keeps(batch: list[Run], marks: dict[str, Origin]) -> None:
    records = list(range(sum(count for _, count in batch)))
    assert keep_new(records, batch, marks) == one_by_one(records, per_record(batch), marks)


@given(
    st.lists(st.one_of(st.none(), origins), max_size=12),
    st.dictionaries(st.sampled_from(["a", "b"]), origins),
)
def test_per_record_origins_folded_into_runs_keep_what_the_rule_keeps(
    batch: list[Origin | None], marks: dict[str, Origin]
) -> None:
    records = list(range(len(batch)))
    folded = check_origins("t", records, batch) or [(None, len(batch))]
    assert per_record(folded) == batch if batch else folded == [(None, 0)]
    assert keep_new(records, folded, marks) == one_by_one(records, batch, marks)


@given(st.integers(0, 3), st.integers(1, 20), st.integers(0, 25), st.one_of(st.none(), origins))
def test_a_run_half_written_is_split_where_the_mark_is(
    position: int, n: int, cut: int, mark: Origin | None
) -> None:
    """A run whose first records the table has (its mark inside the run) keeps only the rest."""
    first = Origin("a", "l1", position, 3)
    inside = {"a": first.nth(cut - 1)} if cut else {}  # `cut` records of the run already written
    marks = inside if mark is None else {"a": Origin("a", mark.log_id, mark.position, mark.index)}
    records = list(range(n))
    kept, last = keep_new(records, [(first, n)], marks)
    assert (kept, last) == one_by_one(records, per_record([(first, n)]), marks)
    if mark is None:
        assert kept == records[min(cut, n) :]
        assert last["a"] == (first.nth(n - 1) if cut < n else first.nth(cut - 1))
