"""Named windows, triggers and anonymous inner queries."""

from __future__ import annotations

import pytest

import engine
from tests.support.replaying import assert_restore_equivalent, events, run


def test_named_window_is_shared_by_queries() -> None:
    plan = (
        "define stream S (v int); define window W (v int) length(2) output all events;"
        "from S insert into W; from W select sum(v) as t insert into Out; from W select v insert expired events into Gone;"
    )
    c = run(plan, events("S", [(1,), (2,), (3,)]))
    assert c.rows("Out") == [(1,), (3,), (5,)]
    assert c.rows("Gone") == [(1,)]


def test_periodic_start_and_cron_triggers() -> None:
    plan = "define trigger T5 at every 500 milliseconds; define trigger Boot at 'start'; define trigger Cron at '*/1 * * * * ?';"
    c = run(plan, [{"time": 2100}])
    assert c.rows("T5") == [(1500,), (2000,)]
    assert c.rows("Boot") == [(1000,)]
    assert c.rows("Cron") == [(2000,)]  # cron fires on whole seconds of the playback clock


def test_trigger_may_take_the_name_of_its_own_stream_definition() -> None:
    """Siddhi lets `define trigger T` follow `define stream T (triggered_time long)` (an equal
    stream is no duplicate), as WSO2's IS analytics do; any other stream of that name is one."""
    plan = (
        "define stream Tick (triggered_time long); define trigger Tick at every 500 milliseconds;"
        "from Tick select triggered_time as t insert into Out;"
    )
    assert run(plan, [{"time": 2100}]).rows("Out") == [(1500,), (2000,)]
    for other in (
        "define stream Tick (t long);",
        "@Async(buffer.size='8') define stream Tick (triggered_time long);",
    ):
        with pytest.raises(engine.QueryError, match="'Tick' is already defined as a stream"):
            engine.compile(other + "define trigger Tick at every 500 milliseconds;")


def test_bad_cron_expression_is_rejected() -> None:
    with pytest.raises(engine.QueryError, match="cron"):
        engine.compile("define trigger T at '61 * * * * ?';")


def test_anonymous_inner_query() -> None:
    plan = "define stream S (v int); from (from S#window.length(2) select sum(v) as t return) select t * 10 as x insert into Out;"
    assert run(plan, events("S", [(1,), (2,), (3,)])).rows("Out") == [(10,), (30,), (50,)]


def test_trigger_and_named_window_state_restore() -> None:
    assert_restore_equivalent(
        "define trigger T at every 300 milliseconds;", [{"time": 1500}, {"time": 2000}, {"time": 2500}]
    )
    plan = "define stream S (v int); define window W (v int) time(1 sec); from S insert into W; from W select v insert all events into Out;"
    assert_restore_equivalent(plan, events("S", [(1,), (2,)], step=600) + [{"time": 4000}])


def test_a_stream_a_query_defines_takes_events_through_send() -> None:
    plan = "define stream S (v int); from S select v insert into Mid; from Mid[v > 1] select v * 10 as w insert into Out;"
    c = run(plan, [{"stream": "Mid", "timestamp": 1000, "data": [5]}])
    assert c.rows("Out") == [(50,)]
