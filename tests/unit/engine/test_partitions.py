"""Partitions: value and range keys, inner streams, per-key state, purge."""

from __future__ import annotations

import random
import zlib

import pytest

import engine
from tests.support.replaying import assert_restore_equivalent, events, run


def test_every_window_and_aggregate_is_per_key() -> None:
    plan = (
        "define stream S (k string, v int); partition with (k of S) begin "
        "from S#window.length(2) select k, sum(v) as t insert into Out; end;"
    )
    c = run(plan, events("S", [("a", 1), ("b", 10), ("a", 2), ("a", 3), ("b", 20)]))
    assert c.rows("Out") == [("a", 1), ("b", 10), ("a", 3), ("a", 5), ("b", 30)]


def test_range_partition_sends_an_event_to_each_matching_range() -> None:
    plan = (
        "define stream S (v int); partition with (v > 10 as 'big' or v > 0 as 'positive' of S) begin "
        "from S select count() as n insert into Out; end;"
    )
    c = run(plan, events("S", [(5,), (50,), (-1,)]))
    assert c.rows("Out") == [(1,), (1,), (2,)]  # 5 → positive; 50 → big, then positive; -1 → none


def test_time_window_per_key_expires_each_event_when_its_second_is_up() -> None:
    # Siddhi WindowPartitionTestCase.testWindowPartitionQuery3: the IBM events of 1000 and
    # 1200 expire at 2000 and 2200, each with its own output, though the next event comes at 4200
    plan = (
        "define stream cseEventStream (symbol string, price float, volume int);"
        "partition with (symbol of cseEventStream) begin "
        "from cseEventStream#window.time(1 sec) "
        "select symbol, default(sum(price), 0.0) as price, volume "
        "insert all events into OutStockStream; end;"
    )
    rows = [("IBM", 70.0, 100), ("WSO2", 700.0, 100), ("IBM", 100.0, 200)]
    later = [("IBM", 200.0, 300), ("WSO2", 1000.0, 100)]
    c = run(plan, events("cseEventStream", rows, step=100) + events("cseEventStream", later, 4200, 100))
    ibm = [(t, k, r[1]) for s, t, k, r in c.records if r[0] == "IBM"]
    assert ibm == [
        (1000, "current", 70.0),
        (1200, "current", 170.0),
        (2000, "expired", 100.0),
        (2200, "expired", 0.0),
        (4200, "current", 200.0),
    ]
    assert [r[1] for r in c.rows("OutStockStream") if r[0] == "WSO2"] == [700.0, 0.0, 1000.0]


def test_inner_streams_stay_within_the_key() -> None:
    plan = (
        "define stream S (k string, v int); partition with (k of S) begin "
        "from S select k, v * 2 as v insert into #Doubled; "
        "from #Doubled select k, sum(v) as t insert into Out; end;"
    )
    c = run(plan, events("S", [("a", 1), ("b", 2), ("a", 3)]))
    assert c.rows("Out") == [("a", 2), ("b", 4), ("a", 8)]


def test_a_stream_the_partition_does_not_key_reaches_every_existing_key() -> None:
    plan = (
        "define stream S (k string); define stream Reset (x int); partition with (k of S) begin "
        "from S select k insert into #Seen; from Reset join #Seen#window.length(1) select #Seen.k as k insert into Out; end;"
    )
    items = events("S", [("a",), ("b",)]) + [{"stream": "Reset", "timestamp": 2000, "data": [1]}]
    c = run(plan, items)
    assert sorted(c.rows("Out")) == [("a",), ("b",)]


@pytest.mark.parametrize("fuse", [False, True], ids=["per_key", "fused"])
def test_purge_drops_idle_keys(fuse: bool) -> None:
    plan = (
        "define stream S (k string, v int); "
        "@purge(enable='true', interval='1 sec', idle.period='2 sec') "
        "partition with (k of S) begin from S select k, count() as n insert into Out; end;"
    )
    rt = engine.compile(plan, start_time=1000, fuse_partitions=fuse)
    got: list[tuple] = []
    rt.subscribe("Out", lambda evs: got.extend(tuple(e.data) for e in evs))
    for i in range(100):
        rt.send("S", [(f"k{i}", 1)], timestamps=1000 + i)

    def partition_state() -> list[object]:
        """The keys the partition holds (a fused one lists them under "keys")."""
        parts = engine.runtime.state.decode(rt.snapshot())["parts"]
        state = next(p["state"] for key, p in parts.items() if key.startswith("partition:"))
        return state["keys"] if fuse else state

    assert len(partition_state()) == 100
    rt.advance_to(10_000)
    assert len(partition_state()) == 0
    rt.send("S", [("k1", 1)], timestamps=10_001)
    assert got[-1] == ("k1", 1)  # a purged key starts afresh


def test_partition_state_restores_exactly() -> None:
    plan = (
        "define stream S (k string, v int); partition with (k of S) begin "
        "from S#window.time(1 sec) select k, sum(v) as t insert all events into Out; end;"
    )
    items = events("S", [("a", 1), ("b", 10), ("a", 2), ("b", 20)], step=400) + [{"time": 4000}]
    assert_restore_equivalent(plan, items)


@pytest.mark.parametrize(
    "query",
    [
        "from every e1=S -> e2=S[e1.k == k and v > e1.v + 5] within 20 milliseconds select e1.k as k, e1.v as a, e2.v as b insert into Out;",
        "from every e1=S[v > 10] -> e2=S[v < e1.v] select e2.k as k, e1.v as a, e2.v as b, eventTimestamp() as ts insert into Out;",
        "from every e1=S -> e2=S[v == e1.v] within 50 milliseconds select e2.v * 2 as twice insert into Out; from Out select twice insert into Again;",
    ],
)
def test_fused_keyed_followed_by_matches_per_key_instances(query: str) -> None:
    rng = random.Random(zlib.crc32(query.encode()))
    items: list[dict] = []
    t = 1000
    for _ in range(400):
        t += rng.choice([0, 1, 2, 7, 30])
        value = rng.choice([None, *range(40)]) if rng.random() < 0.05 else rng.randrange(40)
        items.append({"stream": "S", "timestamp": t, "data": [rng.choice(["a", "b", "c", None]), value]})
        if rng.random() < 0.03:
            t += 100
            items.append({"time": t})
    head, _, rest = query.partition(";")
    plan = f"define stream S (k string, v int); @purge(enable='true', interval='50 milliseconds', idle.period='80 milliseconds') partition with (k of S) begin {head}; end;{rest}"
    fused = run(plan, items, fuse_partitions=True).records
    assert fused == run(plan, items, fuse_partitions=False).records and fused


def test_a_fused_snapshot_restores_only_into_a_fused_runtime() -> None:
    plan = (
        "define stream S (k string, v int); partition with (k of S) begin "
        "from every e1=S -> e2=S[v > e1.v] select e1.v as a, e2.v as b insert into Out; end;"
    )
    fused = engine.compile(plan, start_time=1000)
    fused.send("S", [("a", 1)], timestamps=1000)
    blob = fused.snapshot()
    per_key = engine.compile(plan, start_time=1000, fuse_partitions=False)
    with pytest.raises(engine.StateError, match=r"partition .*fuse_partitions"):
        per_key.restore(blob)
    again = engine.compile(plan, start_time=1000)
    again.restore(blob)
    out: list[tuple[object, ...]] = []
    again.subscribe("Out", lambda events: out.extend(tuple(e.data) for e in events))
    again.send("S", [("a", 5)], timestamps=1001)
    assert out == [(1, 5)]


def test_fused_partition_state_restores_exactly() -> None:
    plan = (
        "define stream S (k string, v int); partition with (k of S) begin "
        "from every e1=S -> e2=S[v > e1.v] within 1 sec select e1.v as a, e2.v as b insert into Out; end;"
    )
    items = events("S", [("a", 1), ("b", 5), ("a", 2), ("b", 7), ("a", 0), ("a", 9)], step=300) + [
        {"time": 9000}
    ]
    assert_restore_equivalent(plan, items)


def test_purge_that_drops_a_key_keeps_its_timer_in_the_same_pass() -> None:
    """Dropping a key unregisters its timers while the purge timer fires: the purge's next
    round, already due, must still fire in that pass (it once waited for the next send)."""
    plan = (
        "define stream S (k string, v int); "
        "@purge(enable='true', interval='40 milliseconds', idle.period='60 milliseconds') "
        "partition with (k of S) begin from S#window.length(2) select k, sum(v) as t insert into Out; end;"
    )
    rt = engine.compile(plan, start_time=1000, fuse_partitions=False)
    rt.send("S", [("a", 1)], timestamps=1000)
    rt.send("S", [("b", 1), ("b", 2)], timestamps=[1001, 1200])  # timers up to 1200 fire at 1200
    assert rt.next_timer() == 1240
