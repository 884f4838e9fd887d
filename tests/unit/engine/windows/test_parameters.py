"""Window parameters Siddhi requires constant refuse expressions and attributes, at the
parameter's position; attribute and dynamic parameters still take them."""

from __future__ import annotations

import pytest

import engine

DEFS = "define stream cseEventStream (symbol string, price float, volume int, ts long, start long);\n"


@pytest.mark.parametrize(
    ("window", "col", "words"),
    [
        # Siddhi LengthBatchWindowTestCase.lengthBatchWindowTest19 / Test20
        ("lengthBatch(1/2)", 40, "parameter 1 (window.length) must be a constant, found an expression"),
        ("lengthBatch(1, 1/2)", 43, "parameter 2 (stream.current.event) must be"),
        # TimeBatchWindowTestCase: timeBatch(1 sec, 1/2) and timeBatch(1 sec, 0, 1/2)
        ("timeBatch(1 sec, 1/2)", 45, "parameter 2 (start.time) must be a constant"),
        ("timeBatch(1 sec, 0, 1/2)", 48, "parameter 3 (stream.current.event) must be a constant"),
        # DelayWindowTestCase.delayWindowTest8
        ("delay(1/2)", 34, "parameter 1 (window.delay) must be a constant"),
        ("length(volume)", 35, "must be a constant, found a value read from each event"),
        ("time(1 sec + 1)", 33, "parameter 1 (window.time) must be a constant"),
        ("sort(1 + 1, price)", 33, "parameter 1 (window.length) must be a constant"),
        ("externalTime(ts, 1 sec * 2)", 45, "parameter 2 (window.time) must be a constant"),
    ],
)
def test_a_constant_window_parameter_refuses_an_expression(window: str, col: int, words: str) -> None:
    plan = DEFS + f"from cseEventStream#window.{window} select symbol insert into O;"
    with pytest.raises(engine.QueryError) as info:
        engine.compile(plan)
    assert words in str(info.value)
    assert (info.value.line, info.value.col) == (2, col)


@pytest.mark.parametrize(
    "window",
    [
        "externalTime(ts, 1 sec)",
        "externalTimeBatch(ts, 1 sec, start)",
        "sort(2, price, 'asc', volume)",
        "frequent(2, symbol)",
        "session(5 sec, symbol)",
        "unique:length(symbol, 3)",
        "length((3))",
        "timeBatch(1 sec, -1)",
    ],
)
def test_attribute_and_dynamic_window_parameters_take_attributes(window: str) -> None:
    engine.compile(DEFS + f"from cseEventStream#window.{window} select symbol insert into O;")
