"""The hand-off directory: whole files, indexes in input order across reopenings, and
modification times that put files in the order they were written."""

from __future__ import annotations

import json
import os
from pathlib import Path

from adapters.thrift.events import WireEvent
from app.spark.handoff import HandOff, HandOffHandler


def test_files_keep_input_order_in_names_lines_and_modification_times(tmp_path: Path) -> None:
    handoff = HandOff(str(tmp_path))
    for k in range(20):
        handoff.append([("S", 1000 + k, [k]), ("S", 1000 + k, [k + 100])])
    reopened = HandOff(str(tmp_path))
    assert reopened.next_index == 40
    reopened.append([("S", 2000, [7])])
    names = sorted(os.listdir(tmp_path))
    assert not [n for n in names if n.startswith(".")]
    mtimes = [os.stat(tmp_path / n).st_mtime_ns // 1_000_000 for n in names]
    assert mtimes == sorted(set(mtimes)), "two files share a millisecond or go back"
    indexes = [json.loads(line)["i"] for n in names for line in (tmp_path / n).read_text().splitlines()]
    assert indexes == list(range(41))


def test_the_thrift_handler_hands_events_over_as_the_stream_attributes(tmp_path: Path) -> None:
    handler = HandOffHandler(HandOff(str(tmp_path)))
    handler.publish([WireEvent("Temp:1.0.0", 5, ("dev1",), None, ("r1", 21.5))])
    (name,) = os.listdir(tmp_path)
    assert json.loads((tmp_path / name).read_text()) == {
        "i": 0,
        "stream": "Temp",
        "timestamp": 5,
        "data": ["dev1", "r1", 21.5],
    }
