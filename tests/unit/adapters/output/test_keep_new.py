"""`keep_new`: its shortcut for a batch of one source in order keeps what the record-by-record rule keeps."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from adapters.output import Origin
from adapters.output.rdbms.delivered import keep_new

origins = st.builds(
    Origin, st.sampled_from(["a", "b"]), st.sampled_from(["l1", "l2"]), st.integers(0, 4), st.integers(0, 3)
)


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


@given(
    st.lists(st.one_of(st.none(), origins), max_size=12),
    st.dictionaries(st.sampled_from(["a", "b"]), origins),
)
def test_any_batch_keeps_what_the_rule_keeps(batch: list[Origin | None], marks: dict[str, Origin]) -> None:
    records = list(range(len(batch)))
    assert keep_new(records, batch, marks) == one_by_one(records, batch, marks)


@given(st.integers(0, 3), st.integers(1, 20), st.one_of(st.none(), origins))
def test_a_run_of_one_source_in_order_keeps_what_the_rule_keeps(
    position: int, n: int, mark: Origin | None
) -> None:
    batch: list[Origin | None] = [Origin("a", "l1", position + i // 3, i % 3) for i in range(n)]
    marks = {} if mark is None else {"a": Origin("a", mark.log_id, mark.position, mark.index)}
    records = list(range(n))
    assert keep_new(records, batch, marks) == one_by_one(records, batch, marks)
