from __future__ import annotations

from adapters.wording import counted


def test_one_is_singular_and_every_other_count_plural() -> None:
    assert [counted(n, "event") for n in (0, 1, 2)] == ["0 events", "1 event", "2 events"]
    assert counted(1, "query", "queries") == "1 query"
    assert counted(3, "query", "queries") == "3 queries"
