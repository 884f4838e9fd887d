"""Window parameters Siddhi requires constant refuse expressions and attributes, at the
parameter's position; attribute and dynamic parameters still take them, and the window's output
shows it read them."""

from __future__ import annotations

import pytest

import engine
from tests.support.replaying import Item, run

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


def ev(t: int, symbol: str, price: float = 1.0, *, volume: int = 1, ts: int = 0, start: int = 0) -> Item:
    return {"stream": "cseEventStream", "timestamp": t, "data": [symbol, price, volume, ts, start]}


# each window's output (timestamp, current/expired, (symbol, price)) when it reads its attribute
# or dynamic parameter as Siddhi does; the comment says what ignoring that parameter would change
@pytest.mark.parametrize(
    ("window", "items", "expected"),
    [
        pytest.param(
            "externalTime(ts, 1 sec)",
            [ev(1000, "A", ts=1000), ev(1001, "B", ts=1500), ev(1002, "C", ts=2000)],
            # A leaves when an event's ts is 1 s past its own (the playback clock is still at 1002),
            # stamped with that ts, before the event that pushed it out
            [(1000, "current", ("A", 1.0)), (1001, "current", ("B", 1.0)), (2000, "expired", ("A", 1.0))]
            + [(1002, "current", ("C", 1.0))],
            id="externalTime",
        ),
        pytest.param(
            "externalTimeBatch(ts, 1 sec, start)",
            [
                ev(1000, "A", ts=1200, start=500),
                ev(1001, "B", ts=1400),
                ev(1002, "C", ts=1500),
                ev(1003, "D", ts=2500),
            ],
            # the first event's start (500) aligns the batches to 500 + k s: C at 1500 closes [A, B]
            # (from A's ts alone the first batch would end at 2200, with C in it); D at 2500 closes
            # [C], after the previous batch expires
            [(1000, "current", ("A", 1.0)), (1001, "current", ("B", 1.0))]
            + [(2500, "expired", ("A", 1.0)), (2500, "expired", ("B", 1.0)), (1002, "current", ("C", 1.0))],
            id="externalTimeBatch",
        ),
        pytest.param(
            "sort(2, price, 'asc', volume)",
            [ev(1000, "A", 10.0, volume=1), ev(1001, "B", 5.0, volume=1), ev(1002, "C", 10.0, volume=0)],
            # A and C tie on price; volume puts A last (without it the newer C would sort last)
            [(1000, "current", ("A", 10.0)), (1001, "current", ("B", 5.0)), (1002, "current", ("C", 10.0))]
            + [(1002, "expired", ("A", 10.0))],
            id="sort",
        ),
        pytest.param(
            "frequent(2, symbol)",
            [ev(1000, "A", 1.0), ev(1001, "A", 2.0), ev(1002, "B"), ev(1003, "C")],
            # keyed by symbol A counts 2: C finds the window full, A and B lose one each, B leaves
            # and C takes its place (keyed by the whole event the two As would be two keys)
            [(1000, "current", ("A", 1.0)), (1001, "current", ("A", 2.0)), (1002, "current", ("B", 1.0))]
            + [(1003, "expired", ("B", 1.0)), (1003, "current", ("C", 1.0))],
            id="frequent",
        ),
        pytest.param(
            "session(5 sec, symbol)",
            [ev(1000, "A"), ev(3000, "B"), ev(4000, "A"), {"time": 10000}],
            # one session per symbol: B's ends at 8000, A's (extended by its second event) at 9000;
            # a session's events expire with their own timestamps
            [(1000, "current", ("A", 1.0)), (3000, "current", ("B", 1.0)), (4000, "current", ("A", 1.0))]
            + [(3000, "expired", ("B", 1.0)), (1000, "expired", ("A", 1.0)), (4000, "expired", ("A", 1.0))],
            id="session",
        ),
        pytest.param(
            "unique:length(symbol, 3)",
            [ev(1000, "A", 1.0), ev(1001, "B"), ev(1002, "A", 2.0), ev(1003, "C"), ev(1004, "D")],
            # the second A replaces the first; D is the fourth symbol, so the oldest (B) leaves
            [(1000, "current", ("A", 1.0)), (1001, "current", ("B", 1.0)), (1002, "expired", ("A", 1.0))]
            + [(1002, "current", ("A", 2.0)), (1003, "current", ("C", 1.0)), (1004, "expired", ("B", 1.0))]
            + [(1004, "current", ("D", 1.0))],
            id="unique:length",
        ),
        pytest.param(
            "length((3))",
            [ev(1000, "A"), ev(1001, "B"), ev(1002, "C"), ev(1003, "D")],
            [(1000, "current", ("A", 1.0)), (1001, "current", ("B", 1.0)), (1002, "current", ("C", 1.0))]
            + [(1003, "expired", ("A", 1.0)), (1003, "current", ("D", 1.0))],
            id="length",
        ),
        pytest.param(
            "timeBatch(1 sec, -1)",
            [ev(1000, "A"), ev(1500, "B"), ev(1999, "C"), {"time": 3000}],
            # batches start at -1 + k s: the first ends at 1999, before C (it would end at 2000,
            # with C in it, from the first event alone); the second ends at 2999
            [(1000, "current", ("A", 1.0)), (1500, "current", ("B", 1.0))]
            + [(2999, "expired", ("A", 1.0)), (2999, "expired", ("B", 1.0)), (1999, "current", ("C", 1.0))],
            id="timeBatch",
        ),
    ],
)
def test_attribute_and_dynamic_window_parameters_take_attributes(
    window: str, items: list[Item], expected: list[tuple[int, str, tuple[str, float]]]
) -> None:
    plan = DEFS + f"from cseEventStream#window.{window} select symbol, price insert all events into O;"
    assert [(t, kind, row) for _, t, kind, row in run(plan, items).records] == expected
