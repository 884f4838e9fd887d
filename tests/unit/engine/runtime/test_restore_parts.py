"""Snapshots keyed per query and definition: a plan edited in one place restores every other
part with its state and timers; what no longer fits is reported by name."""

from __future__ import annotations

from typing import Any

import pytest

import engine
from engine.events import Chunk
from engine.runtime import state as state_codec

PLAN = """
@app:name('Shop')
define stream S (k string, v double);
define table Seen (k string);

@info(name='q1')
from S#window.length(3) select sum(v) as total insert into Totals;

from every e1=S -> e2=S[v > e1.v * 10] select e1.v as a, e2.v as b insert into Jumps;

@info(name='q2')
from S#window.length(2) select count() as n insert into Counts;

from S select k insert into Seen;
"""


def outputs(rt: engine.Runtime) -> dict[str, list[tuple[Any, ...]]]:
    got: dict[str, list[tuple[Any, ...]]] = {}

    def collect(stream: str, chunk: Chunk) -> None:
        got.setdefault(stream, []).extend(tuple(row) for row in chunk.rows)

    for stream in rt.output_streams:
        rt.subscribe_chunks(stream, collect)
    return got


def fed(plan: str) -> engine.Runtime:
    rt = engine.compile(plan, start_time=1000)
    rt.send("S", [("a", 1.0), ("b", 2.0), ("c", 3.0)], timestamps=[1000, 1001, 1002])
    return rt


def test_an_edit_of_comments_and_whitespace_keeps_every_part() -> None:
    blob = fed(PLAN).snapshot()
    edited = "-- the shop\n" + PLAN.replace("select sum(v)", "select   /* running */ sum(v)").replace(
        "\n\n", "\n"
    )
    rt = engine.compile(edited, start_time=1000)
    report = rt.restore(blob)
    assert report.fresh == [] and report.unfit == []
    assert report.kept == [
        "table 'Seen'",
        "query 'q1'",
        "unnamed query 'from every e1=S -> e2=S[v > e1.v * 10]…'",
        "query 'q2'",
    ]


def test_editing_one_query_keeps_the_others_windows_and_pattern_matches() -> None:
    blob = fed(PLAN).snapshot()
    edited = "-- a new query first renumbers the unnamed ones\n" + PLAN.replace(
        "@info(name='q1')", "from S[v < 0] select k insert into Negative;\n@info(name='q1')"
    ).replace("#window.length(2) select count()", "#window.length(5) select count()").replace(
        "insert into Jumps;", "insert into Jumps; -- jumps"
    )
    rt = engine.compile(edited, start_time=1000)
    report = rt.restore(blob, partial=True)
    assert "query 'q1'" in report.kept and "query 'q2'" in report.fresh
    assert any(label.startswith("unnamed query 'from every") for label in report.kept)
    assert report.unfit == [("query 'q2'", "its text changed")]
    got = outputs(rt)
    rt.send("S", [("d", 40.0)], timestamps=1003)
    assert got["Totals"] == [(45.0,)]  # 2 + 3 + 40: q1's window kept its contents
    assert got["Jumps"] == [(1.0, 40.0), (2.0, 40.0), (3.0, 40.0)]  # the partial matches survived
    assert got["Counts"] == [(1,)]  # the edited query started empty


def test_a_full_restore_refuses_a_snapshot_that_does_not_fit_and_names_the_part() -> None:
    blob = fed(PLAN).snapshot()
    rt = engine.compile(PLAN.replace("length(2)", "length(4)"), start_time=1000)
    with pytest.raises(engine.StateError, match=r"query 'q2': its text changed; restore with partial=True"):
        rt.restore(blob)


def test_a_changed_schema_is_unfit_with_the_query_name() -> None:
    blob = fed(PLAN).snapshot()
    renamed = PLAN.replace("select count() as n", "select count() as events")
    report = engine.compile(renamed, start_time=1000).restore(blob, partial=True)
    assert report.unfit == [("query 'q2'", "its output schema changed")]
    wider = PLAN.replace("(k string, v double)", "(k string, v double, note string)")
    report = engine.compile(wider, start_time=1000).restore(blob, partial=True)
    assert ("query 'q1'", "its input schema changed") in report.unfit
    assert report.kept == ["table 'Seen'"]


def test_a_removed_query_is_unfit_and_a_new_one_fresh() -> None:
    blob = fed(PLAN).snapshot()
    without_q2 = PLAN.replace(
        "@info(name='q2')\nfrom S#window.length(2) select count() as n insert into Counts;", ""
    )
    with_q3 = without_q2 + "@info(name='q3') from S#window.length(2) select max(v) as m insert into Maxima;"
    report = engine.compile(with_q3, start_time=1000).restore(blob, partial=True)
    assert report.unfit == [("query 'q2'", "it is no longer in the plan")]
    assert report.fresh == ["query 'q3'"]


TIMED = """
define stream S (k string, v double);
from S#window.time(1 sec) select k, count() as n insert expired events into Gone;
partition with (k of S) begin
    from S#window.time(2 sec) select k, sum(v) as t insert expired events into KeyGone;
end;
"""


def test_timers_come_back_with_their_part_after_an_edit_elsewhere() -> None:
    rt = engine.compile(TIMED, start_time=1000)
    rt.send("S", [("a", 1.0), ("b", 2.0)], timestamps=[1000, 1500])
    blob = rt.snapshot()
    expected = outputs(rt)
    rt.advance_to(4000)
    edited = (
        "define stream S (k string, v double);\nfrom S[v < 0] select k insert into Negative;\n"
        + TIMED.split(";", 1)[1]
    )
    again = engine.compile(edited, start_time=1000)
    report = again.restore(blob, partial=True)
    assert len(report.kept) == 2 and report.unfit == [] and report.fresh == []
    got = outputs(again)
    again.advance_to(4000)
    assert got == expected
    assert got["Gone"] == [("a", 1), ("b", 0)] and sorted(got["KeyGone"]) == [("a", None), ("b", None)]


def test_a_new_trigger_starts_after_a_partial_restore() -> None:
    blob = fed(PLAN).snapshot()
    with_trigger = (
        PLAN + "define trigger Tick at every 1 sec;\nfrom Tick select triggered_time as t insert into Ticks;"
    )
    rt = engine.compile(with_trigger, start_time=1000)
    report = rt.restore(blob, partial=True)
    assert report.fresh == ["trigger 'Tick'"]
    got = outputs(rt)
    rt.advance_to(3500)
    assert got["Ticks"] == [(2000,), (3000,)]


def test_capture_then_events_then_encode_gives_the_state_at_capture_time() -> None:
    rt = fed(PLAN)
    at_capture = rt.snapshot()
    captured = rt.capture()
    rt.send("S", [("d", 40.0), ("e", 500.0)], timestamps=[1003, 1004])
    assert captured.encode() == at_capture
    again = engine.compile(PLAN, start_time=1000)
    again.restore(captured.encode())
    got = outputs(again)
    again.send("S", [("d", 40.0)], timestamps=1003)
    assert got["Totals"] == [(45.0,)]


def test_corrupt_truncated_and_foreign_snapshots_are_refused_clearly() -> None:
    blob = fed(PLAN).snapshot()
    rt = engine.compile(PLAN, start_time=1000)
    flipped = blob[:40] + bytes([blob[40] ^ 1]) + blob[41:]
    with pytest.raises(engine.StateError, match="checksum does not match: the snapshot is corrupt"):
        rt.restore(flipped)
    with pytest.raises(engine.StateError, match="truncated"):
        rt.restore(blob[: len(blob) // 2])
    with pytest.raises(engine.StateError, match="truncated"):
        rt.restore(blob[:5])
    with pytest.raises(engine.StateError, match="not a Cepheus snapshot"):
        rt.restore(b"PK\x03\x04 a zip file")
    other = engine.compile(PLAN.replace("'Shop'", "'Bakery'"), start_time=1000)
    with pytest.raises(engine.StateError, match="taken from plan 'Shop', not 'Bakery'"):
        other.restore(blob)
    renamed = other.restore(blob, partial=True)  # a rename alone keeps every part's state
    assert renamed.kept and not renamed.fresh and not renamed.unfit
    old = blob[:4] + (1).to_bytes(2, "little") + blob[6:]
    with pytest.raises(
        engine.StateError, match=f"format version 1 is not supported .*reads {engine.STATE_FORMAT}"
    ):
        rt.restore(old)


def test_a_well_formed_blob_without_a_plans_state_is_refused() -> None:
    from engine.runtime import state

    rt = engine.compile(PLAN, start_time=1000)
    with pytest.raises(engine.StateError, match="does not hold a plan's state"):
        rt.restore(state.encode({"now": 1}, "Shop"))


def test_identical_unnamed_queries_each_keep_their_own_state() -> None:
    plan = (
        "define stream S (v int);\n"
        "from S#window.length(2) select sum(v) as t insert into A;\n"
        "from S#window.length(2) select sum(v) as t insert into A;\n"
    )
    rt = engine.compile(plan, start_time=1000)
    rt.send("S", [(1,), (2,)], timestamps=1000)
    blob = rt.snapshot()
    again = engine.compile("-- two of a kind\n" + plan, start_time=1000)
    assert len(again.restore(blob).kept) == 2
    got = outputs(again)
    again.send("S", [(10,)], timestamps=1001)
    assert got["A"] == [(12,), (12,)]


def test_a_wall_clock_runtime_keeps_a_new_parts_timers_through_a_partial_restore() -> None:
    now = [10_000]
    old = engine.compile(PLAN, clock="wall", wall_time=lambda: now[0])
    old.send("S", [("a", 1.0)])
    blob = old.snapshot()
    with_trigger = (
        PLAN + "define trigger Tick at every 1 sec;\nfrom Tick select triggered_time as t insert into Ticks;"
    )
    rt = engine.compile(with_trigger, clock="wall", wall_time=lambda: now[0])
    report = rt.restore(blob, partial=True)
    assert report.fresh == ["trigger 'Tick'"] and len(report.kept) == 4
    got = outputs(rt)
    now[0] = 12_500
    rt.tick()
    assert got["Ticks"] == [(11_000,), (12_000,)]


def test_a_restore_failing_halfway_leaves_the_runtime_as_it_was() -> None:
    plan = """
    define stream S (k string, v double);
    @info(name='a') from S#window.time(10 sec) select sum(v) as total insert all events into A;
    @info(name='b') from S#window.length(2) select count() as n insert into B;
    """
    source = engine.compile(plan, start_time=1000)
    source.send("S", [("x", 100.0)], 1000)
    tree = state_codec.decode(source.snapshot())
    tree["parts"][next(k for k in tree["parts"] if tree["parts"][k]["label"] == "query 'b'")]["state"] = 7
    broken = state_codec.encode(tree, source.name)  # 'a' loads, then 'b' fails

    target = engine.compile(plan, start_time=1000)
    got = outputs(target)
    target.send("S", [("y", 1.0)], 1000)
    with pytest.raises(engine.StateError, match="query 'b' cannot be read"):
        target.restore(broken, partial=True)
    target.send("S", [("y", 2.0)], 2000)
    target.advance_to(12_500)
    # 'a' went on with its own window (not the snapshot's 100) and its own expiry timers
    assert got == {"A": [(1.0,), (3.0,), (2.0,), (None,)], "B": [(1,), (2,)]}


def test_a_trigger_restored_long_after_its_snapshot_fires_once_not_for_every_missed_run() -> None:
    plan = "define trigger Beat at every 1 sec;"
    now = [1_700_000_000_000]
    source = engine.compile(plan, clock="wall", wall_time=lambda: now[0])
    source.tick()
    blob = source.snapshot()

    now[0] += 7 * 24 * 3600 * 1000  # restored a week later
    target = engine.compile(plan, clock="wall", wall_time=lambda: now[0])
    beats: list[int] = []
    target.subscribe("Beat", lambda events: beats.extend(e.timestamp for e in events))
    target.restore(blob)
    target.tick()
    assert len(beats) == 1 and now[0] - 1000 < beats[0] <= now[0]
    now[0] += 2500  # a short stall: the two runs missed fire one after the other
    target.tick()
    assert len(beats) == 3


def test_a_trigger_on_the_playback_clock_still_fires_every_run() -> None:
    rt = engine.compile("define trigger Beat at every 1 sec;", start_time=1000)
    beats: list[int] = []
    rt.subscribe("Beat", lambda events: beats.extend(e.timestamp for e in events))
    rt.advance_to(11_000)
    assert beats == list(range(2000, 11_001, 1000))
