"""One partition key's state out of a runtime and into another (timers included), and
the partition key function: what a distributed runner keeps in its keyed state store."""

from __future__ import annotations

import pytest

import engine
from engine.errors import CEPError, StateError
from tests.support.replaying import Item, attach, feed

PLAN = """
define stream Temp (room string, temp double);
partition with (room of Temp)
begin
    @info(name = 'avg')
    from Temp#window.time(3 sec) select room, avg(temp) as avgTemp insert all events into AvgTemp;
    @info(name = 'rise')
    from every e1=Temp -> e2=Temp[e1.temp + 5 <= temp] within 4 sec
    select e1.room, e1.temp as initial, e2.temp as final insert into Rise;
end;
"""

ITEMS: list[Item] = [
    {"stream": "Temp", "timestamp": 1000 + i * 700, "data": [room, temp]}
    for i, (room, temp) in enumerate(
        [
            ("a", 20.0),
            ("b", 30.0),
            ("a", 22.0),
            ("a", 27.5),
            ("b", 36.0),
            ("c", 10.0),
            ("a", 19.0),
            ("b", 31.0),
            ("c", 16.0),
            ("a", 40.0),
            ("b", 29.0),
            ("c", 9.0),
            ("a", 41.0),
        ]
    )
] + [{"time": 20_000}]


def compile_plan() -> engine.Runtime:
    return engine.compile(PLAN, start_time=1000, fuse_partitions=False)


def run_whole(items: list[Item]) -> list[tuple]:
    rt = compile_plan()
    c = attach(rt)
    feed(rt, items)
    return c.records


def test_every_key_moved_into_a_fresh_runtime_continues_identically() -> None:
    expected = run_whole(ITEMS)
    assert any(r[2] == "expired" for r in expected) and any(r[0] == "Rise" for r in expected)
    for cut in range(1, len(ITEMS)):
        first = compile_plan()
        c = attach(first)
        feed(first, ITEMS[:cut])
        blobs = [first.snapshot_key("partition1", key) for key in first.partition_keys("partition1")]
        first.shutdown()
        second = compile_plan()
        for stream in second.output_streams:
            second.subscribe_chunks(stream, c)
        moved = [second.restore_key(blob) for blob in blobs if blob is not None]
        assert sorted(moved) == sorted({i["data"][0] for i in ITEMS[:cut] if "data" in i})
        feed(second, ITEMS[cut:])
        assert c.records == expected, f"moving the keys after item {cut} changed the output"


def test_a_key_hosted_in_turn_by_one_runtime_resumes_from_its_own_time() -> None:
    """A Spark task hosts keys one after the other: each key's state comes in, its events
    run, its state goes out, and the runtime is empty again."""
    for key in ("a", "b", "c"):
        own = [i for i in ITEMS if "data" in i and i["data"][0] == key]
        expected = run_whole([*own, {"time": 20_000}])
        host = compile_plan()
        c = attach(host)
        blob: bytes | None = None
        for item in own:
            if blob is not None:
                host.restore_key(blob)
            feed(host, [item])
            blob = host.snapshot_key("partition1", key)
            assert host.drop_key("partition1", key)
            assert host.partition_keys("partition1") == []
            # another key passes through the same runtime, later in time
            host.send("Temp", [("zz", 1.0)], timestamps=item["timestamp"] + 60_000)
            host.drop_key("partition1", "zz")
        assert blob is not None
        host.restore_key(blob)
        feed(host, [{"time": 20_000}])
        assert [r for r in c.records if r[3][0] != "zz"] == expected


def test_key_function_gives_the_keys_of_a_row() -> None:
    rt = engine.compile(
        """
        define stream S (k string, v int);
        define stream R (v int);
        partition with (k of S, v < 10 as 'low' or v >= 5 as 'high' of R)
        begin from S select k, v insert into O1; from R select v insert into O2; end;
        """,
        fuse_partitions=False,
    )
    assert rt.partitions() == {"partition1": ["S", "R"]}
    by_k = rt.partition_key_function("partition1", "S")
    by_range = rt.partition_key_function("partition1", "R")
    assert by_k is not None and by_range is not None
    assert by_k(("x", 1), 1000) == ["x"]
    assert by_k((None, 1), 1000) == []
    assert by_range((7,), 1000) == ["low", "high"]
    assert by_range((12,), 1000) == ["high"]


def test_keys_function_gives_each_row_of_a_batch_its_keys_in_one_pass() -> None:
    rt = engine.compile(
        """
        define stream S (k string, v int);
        define stream R (v int);
        partition with (k of S, v < 10 as 'low' or v >= 5 as 'high' of R)
        begin from S select k, v insert into O1; from R select v insert into O2; end;
        """,
        fuse_partitions=False,
    )
    by_k = rt.partition_keys_function("partition1", "S")
    by_range = rt.partition_keys_function("partition1", "R")
    assert by_k is not None and by_range is not None
    rows = [("x", 1), ("x", 2), (None, 3), ("y", 4), ("x", 5)]
    assert by_k(rows, [1000] * 5) == [["x"], ["x"], [], ["y"], ["x"]]
    assert by_range([(7,), (12,), (1,)], [1000, 1001, 1002]) == [["low", "high"], ["high"], ["low"]]
    same = ("z", 1)
    assert by_k([same, same], [1000, 1000]) == [["z"], ["z"]]  # one row object twice


def test_per_key_state_of_a_fused_partition_is_refused_with_a_way_out() -> None:
    rt = engine.compile(
        "define stream S (k string, v int);"
        "partition with (k of S) begin from every e1=S -> e2=S[e1.v < v] select e1.v as a, e2.v as b"
        " insert into O; end;"
    )
    with pytest.raises(StateError, match="fuse_partitions=False"):
        rt.snapshot_key("partition1", "x")
    with pytest.raises(CEPError, match="no partition 'p9'"):
        rt.partition_keys("p9")


def test_a_blob_of_something_else_is_refused() -> None:
    rt = compile_plan()
    with pytest.raises(StateError, match="snapshot_key"):
        rt.restore_key(rt.snapshot())
