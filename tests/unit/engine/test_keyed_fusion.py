"""Property tests: a partition fused into one keyed operator (plan/fusion.py) gives exactly
what the partition of per-key query instances gives (`fuse_partitions=False`).

1. Windowed aggregates per key (runtime/keyed_window.py): `length`, `externalTime` and
   `externalTimeBatch` or no window, with and without a filter, with `@purge`, null keys, null values,
   event and external timestamps out of order, outputs read downstream or not.
2. The sequence `every e1=S[f1], e2=S[f2]` per key (runtime/keyed_sequence.py).
3. A snapshot taken anywhere restores exactly (tests/support/replaying.py).
4. A null external timestamp stops the chunk with the same error and the same state left.
5. Which partitions fuse, and which stay per key.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine
from engine.runtime import state
from tests.support.replaying import Item, assert_restore_equivalent, attach, events, run, run_with_restore

Record = tuple[str, int, str, tuple[str, ...]]

_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large]


def examples(n: int) -> settings:
    return settings(max_examples=n, deadline=None, suppress_health_check=_HEALTH)


STREAM = "define stream S (k string, v double, ts long); "
PURGE = "@purge(enable='true', interval='40 milliseconds', idle.period='60 milliseconds') "
DOWNSTREAM = " from Out select * insert into Again;"

WINDOWS = [
    "from S#window.length({n}) select k, avg(v) as a insert into Out;",
    "from S[v > 0.0]#window.length({n}) select k, v, sum(v) as s, count() as c, min(v) as mn, max(v) as mx "
    "insert into Out;",
    "from S#window.length({n}) select avg(v) as a, eventTimestamp() as t, ts insert current events into Out;",
    "from S#window.externalTime(ts, {span} milliseconds) select k, avg(v) as a, count() as c insert into Out;",
    "from S[v >= 1.0 or v is null]#window.externalTime(ts, {span} milliseconds) select k, ts, min(v) as mn, "
    "max(v) as mx, stdDev(v) as sd insert into Out;",
    "from S#window.externalTimeBatch(ts, {span} milliseconds) select k, avg(v) as a, count() as c, ts "
    "insert into Out;",
    "from S[v != 2.0]#window.externalTimeBatch(ts, {span} milliseconds) select sum(v) as s, "
    "eventTimestamp() as t insert into Out;",
    "from S select k, sum(v) as s, count() as c, max(v) as mx insert into Out;",
    "from S[v < 5.0] select avg(v) as a, v, ts insert into Out;",
]
SEQUENCES = [
    "from every e1=S, e2=S[v > e1.v + 1] select e1.k as k, e1.v as a, e2.v as b insert into Out;",
    "from every e1=S[v > 3.0], e2=S[e1.k == k and v < e1.v] select e1.v as a, e2.v as b, e2.ts as x "
    "insert into Out;",
    "from every e1=S, e2=S[v is null or v == e1.v] select e2.k as k, e1.ts as x1, e2.ts as x2, "
    "eventTimestamp() as t insert into Out;",
]
QUERIES = WINDOWS + SEQUENCES


def plan_of(query: str, *, purge: bool = False, downstream: bool = False, n: int = 3, span: int = 6) -> str:
    body = query.format(n=n, span=span)
    return (
        STREAM
        + (PURGE if purge else "")
        + f"partition with (k of S) begin {body} end;"
        + (DOWNSTREAM if downstream else "")
    )


def records(c: Any) -> list[Record]:
    """Values by repr: 1 and 1.0, 0.0 and -0.0 differ, nan equals nan."""
    return [(s, t, k, tuple(map(repr, row))) for s, t, k, row in c.records]


# ---- timelines ------------------------------------------------------------------------------

VALUES = [0.0, -0.0, 1.0, 2.0, 2.5, 4.0, 7.25, 10.0, -3.0, 1e300, float("inf")]


@st.composite
def timeline(draw: st.DrawFn, max_events: int = 70, nan: bool = True, null_ts: bool = False) -> list[Item]:
    """Chunks of events over keys a, b, c and null; values with nulls; event timestamps and
    external timestamps (`ts`) that may go back; clock moves between chunks."""
    rnd = draw(st.randoms(use_true_random=True))
    nulls = draw(st.booleans())
    back = draw(st.booleans())
    values = VALUES + ([float("nan")] if nan else [])
    n = rnd.randint(1, max_events)
    t, x = 1000, rnd.randint(-12, 12)
    rows, ts = [], []
    for _ in range(n):
        t += rnd.choice([0, 0, 1, 2, 5, 30])
        x += rnd.choice([-4, -1, 0, 1, 2, 3, 7] if back else [0, 1, 2, 3, 7])
        k = rnd.choice(["a", "b", "c", "a", None])
        v = None if nulls and rnd.random() < 0.15 else rnd.choice(values)
        ext = None if null_ts and rnd.random() < 0.05 else x
        rows.append((k, v, ext))
        ts.append(t if not back or rnd.random() > 0.1 else t - rnd.randint(1, 40))
    items: list[Item] = []
    i = 0
    clock = 0
    while i < n:
        size = rnd.choice([1, 1, 2, 3, 5, 8, 20])
        items.append({"stream": "S", "timestamps": ts[i : i + size], "rows": rows[i : i + size]})
        clock = max(clock, *ts[i : i + size])
        i += size
        if rnd.random() < 0.15:
            clock += rnd.choice([10, 50, 100])
            items.append({"time": clock})
    return items


def _both(plan: str, items: Sequence[Item]) -> tuple[list[Record], list[Record]]:
    return records(run(plan, items)), records(run(plan, items, fuse_partitions=False))


# ---- 1, 2. the fused operators give what the per-key instances give -------------------------


@pytest.mark.parametrize("query", QUERIES, ids=range(len(QUERIES)))
@pytest.mark.parametrize(("purge", "downstream"), [(False, False), (True, False), (False, True)])
@examples(25)
@given(items=timeline(), n=st.sampled_from([1, 2, 3, 7]), span=st.sampled_from([1, 3, 6, 20]))
def test_fused_partition_gives_what_the_per_key_instances_give(
    query: str, purge: bool, downstream: bool, items: list[Item], n: int, span: int
) -> None:
    plan = plan_of(query, purge=purge, downstream=downstream, n=n, span=span)
    fused, per_key = _both(plan, items)
    assert fused == per_key


@pytest.mark.parametrize("query", QUERIES, ids=range(len(QUERIES)))
def test_fused_partition_emits_on_a_fixed_timeline(query: str) -> None:
    """The property above is not vacuous: every shape emits something here."""
    rnd = random.Random(7)
    rows = [(rnd.choice("ab"), float(rnd.randrange(6)), 1000 + 3 * i) for i in range(60)]
    items: list[Item] = [
        {"stream": "S", "timestamps": [1000 + i for i in range(j, j + 6)], "rows": rows[j : j + 6]}
        for j in range(0, 60, 6)
    ]
    fused, per_key = _both(plan_of(query), items)
    assert fused == per_key
    assert fused


# ---- 3. snapshots ---------------------------------------------------------------------------


@pytest.mark.parametrize("query", QUERIES, ids=range(len(QUERIES)))
@pytest.mark.parametrize("purge", [False, True])
@examples(15)
@given(items=timeline(max_events=40, nan=False), data=st.data())
def test_fused_partition_restores_exactly(query: str, purge: bool, items: list[Item], data: Any) -> None:
    plan = plan_of(query, purge=purge)
    cut = data.draw(st.integers(0, len(items)), label="cut")
    assert records(run_with_restore(plan, items, cut)) == records(run(plan, items))


@pytest.mark.parametrize("query", QUERIES, ids=range(len(QUERIES)))
def test_fused_partition_restores_at_every_cut(query: str) -> None:
    rows = [("a", 1.0, 1000), ("b", 5.0, 1002), ("a", 3.5, 1004), (None, 9.0, 1005), ("b", 7.0, 1009)]
    rows += [("a", 0.5, 1011), ("a", 9.0, 1013), ("b", 2.0, 1020), ("a", 9.0, 1021), ("b", 8.0, 1030)]
    items = events("S", rows, step=3)
    items.insert(6, {"time": 1100})
    assert_restore_equivalent(plan_of(query, purge=True, n=2, span=5), items)


def test_a_fused_window_snapshot_restores_only_into_a_fused_runtime() -> None:
    plan = plan_of(WINDOWS[0])
    fused = engine.compile(plan, start_time=1000)
    fused.send("S", [("a", 1.0, 1)], timestamps=1000)
    blob = fused.snapshot()
    per_key = engine.compile(plan, start_time=1000, fuse_partitions=False)
    with pytest.raises(engine.StateError, match=r"partition .*fuse_partitions"):
        per_key.restore(blob)


# ---- 4. a null external timestamp -------------------------------------------------------------


def _run_through_errors(plan: str, items: Sequence[Item], fuse: bool) -> list[Any]:
    rt = engine.compile(plan, start_time=1000, fuse_partitions=fuse)
    c = attach(rt)
    out: list[Any] = []
    for item in items:
        try:
            if "rows" in item:
                rt.send("S", item["rows"], timestamps=item["timestamps"])
            else:
                rt.advance_to(item["time"])
        except engine.ProcessingError as exc:
            out.append(("error", str(exc)))
        out.extend(records(c))
        c.records.clear()
    return out  # what follows an error shows the state it left


@pytest.mark.parametrize("query", [q for q in WINDOWS if "external" in q])
@pytest.mark.parametrize("downstream", [False, True])
@examples(25)
@given(items=timeline(null_ts=True), span=st.sampled_from([1, 3, 6, 20]))
def test_a_null_external_timestamp_fails_alike(
    query: str, downstream: bool, items: list[Item], span: int
) -> None:
    plan = plan_of(query, downstream=downstream, span=span)
    assert _run_through_errors(plan, items, True) == _run_through_errors(plan, items, False)


# ---- 5. which partitions fuse -----------------------------------------------------------------


def shape(plan: str) -> str:
    rt = engine.compile(plan, start_time=1000)
    parts = state.decode(rt.snapshot())["parts"]
    (found,) = [p["shape"] for key, p in parts.items() if key.startswith("partition:")]
    return str(found)


@pytest.mark.parametrize("query", WINDOWS)
def test_windowed_aggregates_fuse(query: str) -> None:
    assert shape(plan_of(query)) == "as one keyed window operator"


@pytest.mark.parametrize("query", SEQUENCES)
def test_sequences_fuse(query: str) -> None:
    assert shape(plan_of(query)) == "as one keyed sequence operator"


@pytest.mark.parametrize(
    "query",
    [
        "from S#window.length(3) select k, avg(v) as a group by k insert into Out;",
        "from S#window.length(3) select k, avg(v) as a having a > 1.0 insert into Out;",
        "from S#window.length(3) select k, avg(v) as a insert all events into Out;",
        "from S#window.length(3) select k, v insert into Out;",
        "from S select k, v insert into Out;",
        "from S#window.length(3) select k, avg(v) as a output last every 2 events insert into Out;",
        "from S#window.time(1 sec) select k, avg(v) as a insert into Out;",
        "from S#window.externalTimeBatch(ts, 1 sec, 0, 100) select k, avg(v) as a insert into Out;",
        "from S#window.length(3) select k, avg(v) as a insert into #Inner; from #Inner select * insert into Out;",
        "from every e1=S, e2=S[v > e1.v] within 1 sec select e1.v as a insert into Out;",
        "from every e1=S, e2=S[v > e1.v], e3=S select e1.v as a insert into Out;",
        "from e1=S, e2=S[v > e1.v] select e1.v as a insert into Out;",
        "from S#window.length(3) select k, avg(v) as v, ts insert into S;",
    ],
)
def test_other_partitions_run_per_key(query: str) -> None:
    assert shape(STREAM + f"partition with (k of S) begin {query} end;") == ""


@examples(15)
@given(items=timeline(null_ts=True))
def test_a_null_external_timestamp_fails_alike_with_a_key_of_the_event_time(items: list[Item]) -> None:
    plan = (
        STREAM + "partition with (eventTimestamp() % 3 of S) begin "
        "from S#window.externalTime(ts, 5 milliseconds) select avg(v) as a, count() as c insert into Out; end;"
    )
    assert shape(plan) == "as one keyed window operator"
    assert _run_through_errors(plan, items, True) == _run_through_errors(plan, items, False)
