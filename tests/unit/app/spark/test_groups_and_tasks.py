"""Execution groups and the task-side tagging, without Spark: a plan split by key over
several runtimes, merged by tag, gives the local engine's output, stream by stream."""

from __future__ import annotations

import heapq
import io
import json
import zlib
from typing import Any

import pytest

import engine
from app.replay import _json_default, _jsonable, event_line, replay
from app.spark.groups import MAIN, plan_groups
from app.spark.reading import row_checker
from app.spark.tasks import Item, run_items
from engine.events import EXPIRED

TEMPERATURE = """
@App:name('wso2-app')
define stream TempStream (deviceID long, roomNo int, temp double);
@info(name = 'query1') @dist(execGroup='group1')
from TempStream#window.time(2 min) select avg(temp) as avgTemp, roomNo, deviceID
insert all events into AvgTempStream;
@info(name = 'query4') @dist(execGroup='group2', parallel='2')
from TempStream[(roomNo >= 100 and roomNo < 110) and temp > 40] select roomNo, temp
insert into HighTempStream;
"""
PARTITIONED = """
define stream Temp (room string, temp double);
define table Rooms (room string);
from Temp select room insert into Rooms;
partition with (room of Temp)
begin
    from Temp#window.time(2 sec) select room, max(temp) as top insert all events into Top;
    from every e1=Temp -> e2=Temp[e1.temp + 5 <= temp] within 10 sec
    select e1.room, e1.temp as initial, e2.temp as final insert into Rise;
end;
"""


def _items() -> list[Item]:
    out: list[Item] = []
    t = 1000
    for i in range(120):
        t += (0, 300, 700, 1000, 2500)[(i * 7) % 5]
        room = "abcde"[(i * 3) % 5]
        out.append((len(out), "Temp", t, [room, 20.0 + (i * 13) % 17]))
        if i % 40 == 39:
            out.append((len(out), None, t + 500, None))
    return out


def _local(plan: str, items: list[Item], outputs: list[str]) -> list[str]:
    lines = [
        json.dumps({"time": ts} if s is None else {"stream": s, "timestamp": ts, "data": d})
        for _, s, ts, d in items
    ]
    out = io.StringIO()
    replay(plan, list(enumerate(lines, 1)), out, start_time=1000, streams=outputs)
    return out.getvalue().splitlines()


def _per_stream(lines: list[str]) -> dict[str, list[str]]:
    got: dict[str, list[str]] = {}
    for line in lines:
        got.setdefault(json.loads(line)["stream"], []).append(line)
    return got


def test_groups_of_the_temperature_seed() -> None:
    groups = plan_groups(TEMPERATURE)
    assert [(g.name, g.parallel, g.outputs) for g in groups] == [
        (MAIN, 1, ("AvgTempStream",)),
        ("query4", 2, ("HighTempStream",)),
    ]
    assert "window.time" not in groups[1].plan and "window.time" in groups[0].plan
    assert groups[0].plan.count("\n") == TEMPERATURE.count("\n")  # positions in messages still match


def test_a_partition_runs_keyed_and_a_table_writer_stays_in_main() -> None:
    main, keyed = plan_groups(PARTITIONED)
    assert keyed.keyed_by == "partition1" and set(keyed.outputs) == {"Top", "Rise"}
    assert "Rooms" in main.plan and "partition with" not in main.plan


def test_a_stateful_query_with_parallel_stays_in_main_and_says_why() -> None:
    plan = TEMPERATURE.replace("@dist(execGroup='group1')", "@dist(execGroup='group1', parallel='3')")
    groups = plan_groups(plan)
    assert len(groups) == 2
    assert any("keeps state needs a partition" in why for why in groups[0].why_main)


def test_timestamps_going_back_put_everything_in_main() -> None:
    assert [g.name for g in plan_groups(PARTITIONED, monotonic=False)] == [MAIN]


@pytest.mark.parametrize("tasks", [1, 2, 3, 5])
def test_keys_spread_over_tasks_merge_back_into_the_local_order(tasks: int) -> None:
    items = _items()
    main, keyed = plan_groups(PARTITIONED)
    outputs = list(keyed.outputs)
    expected = _per_stream(_local(PARTITIONED, items, outputs))
    assert set(expected) == {"Top", "Rise"}
    rt = engine.compile(keyed.plan, fuse_partitions=False)
    key_of = rt.partition_key_function("partition1", "Temp")
    assert key_of is not None
    markers = [it for it in items if it[1] is None]
    buckets: list[list[Item]] = [[] for _ in range(tasks)]
    for it in items:
        if it[1] is not None:
            for key in key_of(tuple(it[3]), it[2]):
                buckets[zlib.crc32(repr(key).encode()) % tasks].append(it)
    runs: list[list[tuple[Any, ...]]] = [
        [(tag, n, order, line) for tag, order, line in run_items(keyed.plan, 1000, outputs, b, markers)]
        for n, b in enumerate(buckets)
    ]
    merged = [line for *_, line in heapq.merge(*(sorted(r) for r in runs))]
    assert _per_stream(merged) == expected


@pytest.mark.parametrize(
    ("stream", "ts", "kind", "row"),
    [
        ("Avg", 1000, 0, ("r1", 2.5)),
        ('Q\u00e9"x', 5, 1, [float("nan"), float("inf"), -float("inf"), None, True, {2, 1}]),
        ("S", 7, 0, ()),
        ("S", 2**70, 0, [1, "x", [0.5]]),
    ],
)
def test_an_event_line_is_the_json_of_the_record(stream: str, ts: int, kind: int, row: Any) -> None:
    expected = json.dumps(
        {
            "stream": stream,
            "timestamp": ts,
            "type": "expired" if kind == EXPIRED else "current",
            "data": [_jsonable(v) for v in row],
        },
        default=_json_default,
    )
    assert event_line(stream, ts, kind, row) == expected


def test_row_checker_takes_exact_values_as_they_are_and_checks_the_rest() -> None:
    rt = engine.compile("define stream S (s string, i int, l long, f float, d double, b bool, o object);")
    check = row_checker(rt, "S")
    row = ["a", 1, 2**40, 1.5, 2.5, True, {"x": 1}]
    assert check(row) == rt.check_row("S", row)
    assert check(["a", 1, 2, 0.1, 2, False, None]) == rt.check_row("S", ["a", 1, 2, 0.1, 2, False, None])
    assert check([None] * 7) == (None,) * 7
    with pytest.raises(ValueError, match="out of range"):
        check(["a", 2**40, 2, 1.5, 2.5, True, None])
    with pytest.raises(TypeError, match="attribute 'b'"):
        check(["a", 1, 2, 1.5, 2.5, 1, None])
    with pytest.raises(ValueError, match="has 7 attributes"):
        check(["a"])
