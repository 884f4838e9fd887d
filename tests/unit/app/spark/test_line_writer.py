"""The tasks' line writer writes exactly what `event_line` writes, fast path or not."""

from __future__ import annotations

import math
from typing import Any

import pytest

from app.replay import event_line
from app.spark.tasks import line_writer
from engine.events import CURRENT, EXPIRED
from engine.types import AttrType

ROWS: list[Any] = [
    ("r1", 1.5, 3, -(2**63), 0.25),
    ('é"\\\n\u2028\x00', 1e300, 0, 2**63 - 1, -0.0),
    ("x", math.nan, 1, 1, 1.0),
    ("x", 1.0, 1, 1, -math.inf),
    (None, 2.0, None, 1, 1.0),
    ("a", 3, 1, 1, 1.0),  # an int where a double is declared
    ("a", 1.0, True, 1, 1.0),  # a bool where an int is declared
    ("a", 1e-7, 2**70, 1, 1e16),
    ["a", 2.5, 1, 1, 1.0],
    ("a", 2.5),  # a row of another length
]
TYPES = [AttrType.STRING, AttrType.DOUBLE, AttrType.INT, AttrType.LONG, AttrType.FLOAT]


@pytest.mark.parametrize("stream", ["Avg", "S0", "x 0, y", 'q"uote'])
@pytest.mark.parametrize("kind", [CURRENT, EXPIRED])
def test_the_same_text_as_event_line(stream: str, kind: int) -> None:
    write = line_writer(stream, kind, TYPES)
    for row in ROWS:
        for t in (5, 0, -3, 2**70, 5.0):
            assert write(t, row) == event_line(stream, t, kind, row)  # type: ignore[arg-type]


def test_other_types_take_event_line() -> None:
    for types in ([AttrType.OBJECT], [AttrType.BOOL, AttrType.STRING], []):
        write = line_writer("S", CURRENT, types)
        row = tuple([True, "a"][: len(types)])
        assert write(7, row) == event_line("S", 7, CURRENT, row)
