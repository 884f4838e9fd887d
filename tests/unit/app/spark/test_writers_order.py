"""The order of a micro-batch's events and outputs when several nodes write one plan's
hand-off (`in/<node>/`): one writer keeps the input order exactly; several keep each
writer's own order, merged by timestamp then writer, the same whatever order the rows
arrive in (a replayed micro-batch)."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pandas as pd

from app.spark.handoff import HandOff
from app.spark.streaming import _TIMED_OUT, _in_order, _output_order


def _rows(events: list[tuple[int, str, int]]) -> Any:
    """(index, writer, timestamp) -> the hand-off rows of one key."""
    return pd.DataFrame(
        {
            "i": [i for i, _, _ in events],
            "w": [w for _, w, _ in events],
            "stream": ["S"] * len(events),
            "ts": [t for _, _, t in events],
            "data": [json.dumps([i, w]) for i, w, _ in events],
        }
    )


def test_one_writer_runs_in_input_order_with_the_input_index() -> None:
    rows = _rows([(5, "", 300), (2, "", 900), (3, "", 100)])  # timestamps going back: kept as today
    assert [(at, i, t) for at, _, i, _, t, _ in _in_order(rows)] == [(2, 2, 900), (3, 3, 100), (5, 5, 300)]


def test_several_writers_merge_by_timestamp_each_in_its_own_order() -> None:
    events = [(0, "a", 100), (1, "a", 300), (2, "a", 200), (0, "b", 150), (1, "b", 300), (2, "b", 400)]
    shuffled = random.Random(3).sample(events, len(events))
    first, again = _in_order(_rows(events)), _in_order(_rows(shuffled))
    assert first == again  # a replay runs the same order
    assert [(w, i) for _, w, i, _, _, _ in first] == [
        ("a", 0),
        ("b", 0),
        ("a", 1),  # ts 300, ties with b's 300: writer a first
        ("a", 2),  # a's own order, though its timestamp (200) went back
        ("b", 1),
        ("b", 2),
    ]
    engine_index = [at for at, *_ in first]
    assert engine_index == sorted(set(engine_index))
    # consecutive events of one writer stay consecutive (one chunk if same stream and time)
    assert engine_index[3] == engine_index[2] + 1 and engine_index[1] == engine_index[0] + 2


def test_outputs_follow_their_causes_and_quiet_keys_last() -> None:
    def out(i: int, w: str, ts: int, n: int) -> dict[str, Any]:
        return {"i": i, "w": w, "ts": ts, "n": n}

    one = [out(4, "", 10, 0), out(_TIMED_OUT, "", 0, 0), out(1, "", 99, 1), out(1, "", 99, 0)]
    assert [(r["i"], r["n"]) for r in _output_order(one)] == [(1, 0), (1, 1), (4, 0), (_TIMED_OUT, 0)]
    several = [out(0, "b", 150, 0), out(1, "a", 300, 0), out(0, "a", 100, 0), out(1, "b", 120, 1)]
    assert [(r["w"], r["i"]) for r in _output_order(several)] == [("a", 0), ("b", 0), ("b", 1), ("a", 1)]


def test_a_writer_marks_its_lines_and_counts_its_own_indexes(tmp_path: Path) -> None:
    a, b = HandOff(str(tmp_path / "a"), writer="node-a"), HandOff(str(tmp_path / "b"), writer="node-b")
    a.append([("S", 1, [1])])
    b.append([("S", 2, [2]), ("S", 3, [3])])
    lines = [
        json.loads(line)
        for d in ("a", "b")
        for n in os.listdir(tmp_path / d)
        for line in (tmp_path / d / n).read_text().splitlines()
    ]
    assert [(x["w"], x["i"]) for x in lines] == [("node-a", 0), ("node-b", 0), ("node-b", 1)]
