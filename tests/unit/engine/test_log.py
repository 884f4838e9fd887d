"""`#log(...)`: Siddhi's LogStreamProcessor (cases after its LogTestCase): each overload's
record, the priority's level, events passed on unchanged, handler order, bad arguments."""

from __future__ import annotations

import logging
import re

import pytest

import engine
from tests.support.replaying import run

S = "@app:name('Test')\ndefine stream StockStream (symbol string, price float, volume int);\n"
EV = "StreamEvent{ timestamp=1000, data=[IBM, 75.6, 100], isExpired=false }"
IBM = [{"stream": "StockStream", "timestamp": 1000, "data": ["IBM", 75.6, 100]}]


def logged(
    caplog: pytest.LogCaptureFixture, handler: str, items: list[dict[str, object]] = IBM
) -> list[tuple[int, str]]:
    caplog.set_level(logging.DEBUG, logger="siddhi.log")
    run(S + f"from StockStream{handler} select * insert into Out;", items)
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "siddhi.log"]


@pytest.mark.parametrize(
    ("handler", "record"),
    [
        ("#log()", (logging.INFO, f"Test: {EV}")),
        ("#log('test message')", (logging.INFO, f"Test: test message, {EV}")),
        ("#log(false)", (logging.INFO, "Test: Event Arrived")),
        ("#log(true)", (logging.INFO, f"Test: {EV}")),
        ("#log('test message', false)", (logging.INFO, "Test: test message")),
        ("#log('test message', true)", (logging.INFO, f"Test: test message, {EV}")),
        ("#log('error', 'test message')", (logging.ERROR, f"Test: test message, {EV}")),
        ("#log('error', 'test message', false)", (logging.ERROR, "Test: test message")),
        ("#log('warn', 'test message', true)", (logging.WARNING, f"Test: test message, {EV}")),
        ("#log('TRACE', 'm')", (logging.DEBUG, f"Test: m, {EV}")),
        ("#log('DEBUG', 'm')", (logging.DEBUG, f"Test: m, {EV}")),
        ("#log('FATAL', 'm')", (logging.CRITICAL, f"Test: m, {EV}")),
        ("#log('INFO', symbol)", (logging.INFO, f"Test: IBM, {EV}")),
    ],
)
def test_each_overload_logs_as_siddhi_does(
    caplog: pytest.LogCaptureFixture, handler: str, record: tuple[int, str]
) -> None:
    assert logged(caplog, handler) == [record]


def test_off_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    assert logged(caplog, "#log('OFF', 'm')") == []


def test_priority_read_from_an_attribute(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="siddhi.log")
    plan = "define stream S (level string, v int);\nfrom S#log(level, 'got') select v insert into Out;"
    run(
        plan,
        [
            {"stream": "S", "timestamp": 1000, "data": ["WARN", 1]},
            {"stream": "S", "timestamp": 1001, "data": ["DEBUG", 2]},
        ],
    )
    assert [r.levelno for r in caplog.records] == [logging.WARNING, logging.DEBUG]
    assert (
        caplog.records[0]
        .getMessage()
        .startswith("SiddhiApp: got, StreamEvent{ timestamp=1000, data=[WARN, 1]")
    )


def test_events_pass_on_unchanged_and_handlers_keep_their_order(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="siddhi.log")
    items = [
        {"stream": "StockStream", "timestamp": 1000, "data": ["IBM", 75.6, 100]},
        {"stream": "StockStream", "timestamp": 1001, "data": ["GOOG", 70.5, 10]},
    ]
    c = run(
        S + "from StockStream[volume > 50]#log('a')[symbol == 'X']#log('b') select symbol insert into Out;",
        items,
    )
    assert c.rows("Out") == []
    assert [r.getMessage()[:8] for r in caplog.records] == ["Test: a,"]
    caplog.clear()
    c = run(S + "from StockStream#log('p', false) select symbol, volume insert into Out;", items)
    assert c.rows("Out") == [("IBM", 100), ("GOOG", 10)]
    assert [r.getMessage() for r in caplog.records] == ["Test: p", "Test: p"]


def test_log_after_a_window_shows_expired_events(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="siddhi.log")
    items = [{"stream": "StockStream", "timestamp": 1000 + i, "data": ["IBM", 1.0, i]} for i in range(2)]
    run(S + "from StockStream#window.length(1)#log() select volume insert all events into Out;", items)
    assert [r.getMessage().rsplit("isExpired=", 1)[1] for r in caplog.records] == [
        "false }",
        "true }",
        "false }",
    ]


def test_nothing_is_formatted_when_the_level_is_off(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="siddhi.log")
    run(S + "from StockStream#log('test message')#log('WARN', 'w', false) select * insert into Out;", IBM)
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [(logging.WARNING, "Test: w")]


@pytest.mark.parametrize(
    ("handler", "message"),
    [
        ("#log(1)", "#log() does not take (int)"),
        ("#log('m', 1)", "#log() does not take (string, int)"),
        ("#log(true, 'm')", "#log() does not take (bool, string)"),
        ("#log('verbose', 'm')", "unknown priority 'verbose'"),
        ("#log('INFO', 'm', 'x')", "#log() does not take (string, string, string)"),
        ("#log('INFO', 'm', true, 1)", "#log() does not take"),
        ("#log(nope)", "unknown attribute 'nope'"),
    ],
)
def test_bad_arguments_are_positioned_query_errors(handler: str, message: str) -> None:
    with pytest.raises(engine.QueryError) as err:
        engine.compile(S + f"from StockStream{handler} select * insert into Out;")
    assert message in str(err.value)
    assert err.value.line == 3
    assert err.value.col >= 16


@pytest.mark.parametrize(
    "handler",
    ["#throughput:throughput(volume, 'both')", "#externalTimeBatch(volume, 1 sec)", "#log()#geo:x(1, 2)"],
)
def test_an_unsupported_stream_function_is_one_error_not_a_bad_log(handler: str) -> None:
    """Another stream function is refused as not supported, and only that: it is not read as
    a #log() with the wrong arguments."""
    with pytest.raises(engine.QueryError) as err:
        engine.compile(S + f"from StockStream{handler} select * insert into Out;")
    messages = [d.message for d in err.value.errors]
    assert len(messages) == 1 and "is not supported" in messages[0], messages


TOKENS = "define stream T (user string, roles string);\n"


def test_str_tokenize_makes_one_event_per_token() -> None:
    """siddhi-execution-string's #str:tokenize: one event per piece of the input split at the
    regex (Java's String.split drops trailing empty pieces), the piece as `token`; the
    handlers after it see `token`, those before it do not."""
    plan = TOKENS + (
        "from T[user != 'x']#str:tokenize(roles, ',')[token != '']"
        " select user, token insert into Out;"
        "from T#str:tokenize(roles, '\\s*;\\s*', true) select token insert into D;"
    )
    c = run(
        plan,
        [
            {"stream": "T", "timestamp": 1000, "data": ["ann", "a,b,,a,,"]},
            {"stream": "T", "timestamp": 1001, "data": ["x", "c"]},
            {"stream": "T", "timestamp": 1002, "data": ["bob", "q ; r;q"]},
        ],
    )
    assert c.rows("Out") == [("ann", "a"), ("ann", "b"), ("ann", "a"), ("bob", "q ; r;q")]
    assert c.rows("D") == [("a,b,,a,,",), ("c",), ("q",), ("r",)]


def test_str_tokenize_feeds_a_window_and_aggregates() -> None:
    plan = (
        TOKENS
        + "from T#str:tokenize(roles, ',')#window.lengthBatch(3) select token, count() as n insert into W;"
    )
    c = run(plan, [{"stream": "T", "timestamp": 1000, "data": ["ann", "a,b,c,d"]}])
    assert c.rows("W") == [("c", 3)]


@pytest.mark.parametrize(
    ("handler", "message"),
    [
        ("[token != '']#str:tokenize(roles, ',')", "unknown attribute 'token'"),
        ("#str:tokenize(roles, user)", "the regex of str:tokenize() must be a constant string"),
        ("#str:tokenize(roles)", "str:tokenize() takes 2 or 3 arguments, got 1"),
        ("#str:tokenize(roles, '(')", "str:tokenize(): bad regular expression"),
        ("#window.length(2)#str:tokenize(roles, ',')", "must come before the window"),
    ],
)
def test_str_tokenize_mistakes(handler: str, message: str) -> None:
    with pytest.raises(engine.QueryError, match=re.escape(message)):
        engine.compile(TOKENS + f"from T{handler} select user insert into Out;")
