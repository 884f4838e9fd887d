"""The Siddhi 5 query guide's examples of named (incremental) aggregations and of store
(on-demand) queries, each run with a small input and checked against the result the guide
documents or, where it shows only the query, the result Siddhi's documented semantics give.

Source: the Siddhi 5.1 Streaming SQL guide (siddhi-io/www, en/docs/docs/query-guide.md;
the same text as siddhi-io/siddhi docs/documentation/siddhi-5.x/query-guide-5.x.md),
sections "Named Aggregation", "Join (Aggregation)" and "Store Query". Times are UTC unless
a `+05:30` says otherwise. A `per` bucket belongs to a `within` range when the bucket's start
does (as Siddhi's in-memory lookup filters AGG_TIMESTAMP; its test6 and test9 show it)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest

import engine
from tests.support.replaying import assert_restore_equivalent, run


def ms(text: str) -> int:
    """'2014-02-15 06:00:00' (UTC) as epoch milliseconds."""
    return int(datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp()) * 1000


def data(events: list[engine.Event]) -> list[tuple[Any, ...]]:
    return [tuple(e.data) for e in events]


TRADE_STREAM = "define stream TradeStream (symbol string, price double, volume long, timestamp long);"

# "Named Aggregation" -> Example: the definition, its @purge annotation included
NAMED_AGGREGATION = TRADE_STREAM + (
    "@purge(enable='true', interval='10 sec',@retentionPeriod(sec='120 sec',min='24 hours',"
    "hours='30 days',days='1 year',months='all',years='all'))\n"
    "define aggregation TradeAggregation\n"
    "  from TradeStream\n"
    "  select symbol, avg(price) as avgPrice, sum(price) as total\n"
    "    group by symbol\n"
    "    aggregate by timestamp every sec ... year;\n"
)

# "Join (Aggregation)" -> Example: the definition the join examples use (it selects AGG_TIMESTAMP)
JOIN_AGGREGATION = TRADE_STREAM + (
    "define aggregation TradeAggregation\n"
    "  from TradeStream\n"
    "  select AGG_TIMESTAMP, symbol, avg(price) as avgPrice, sum(price) as total\n"
    "    group by symbol\n"
    "    aggregate by timestamp every sec ... year;\n"
)

# "Store Query" -> "(Aggregation) Select": the definition the on-demand examples use
STORE_QUERY_AGGREGATION = TRADE_STREAM + (
    "define aggregation TradeAggregation\n"
    "  from TradeStream\n"
    "  select symbol, avg(price) as avgPrice, sum(price) as total\n"
    "    group by symbol\n"
    "    aggregate by timestamp every sec ... year;\n"
)

# Trades around the examples' ranges: "2014-02-15 00:00:00 +05:30" is 2014-02-14 18:30 UTC.
FEBRUARY_TRADES: list[tuple[Any, ...]] = [
    ("WSO2", 80.0, 1, ms("2014-02-13 23:00:00")),  # before every range
    ("WSO2", 10.0, 1, ms("2014-02-14 20:00:00")),  # 2014-02-15 01:30 +05:30; its UTC day starts before
    ("WSO2", 20.0, 1, ms("2014-02-15 06:00:00")),
    ("FB", 30.0, 1, ms("2014-02-15 06:10:00")),
    ("WSO2", 40.0, 1, ms("2014-02-15 06:59:59")),
    ("FB", 50.0, 1, ms("2014-02-15 19:00:00")),  # 2014-02-16 00:30 +05:30, same UTC day
    ("WSO2", 60.0, 1, ms("2014-03-15 12:00:00")),  # its day starts before the range's end
    ("WSO2", 70.0, 1, ms("2014-03-16 12:00:00")),  # after the range
]


def fed(plan: str, trades: list[tuple[Any, ...]] = FEBRUARY_TRADES) -> engine.Runtime:
    rt = engine.compile(plan, start_time=1000)
    rt.send("TradeStream", trades, timestamps=1000)
    return rt


# ---- Named Aggregation ---------------------------------------------------------------------


def test_named_aggregation_example_aggregates_every_granularity_from_sec_to_year() -> None:
    """'Named Aggregation' example: TradeAggregation, avg and sum of price per symbol,
    `every sec ... year`, with the documented @purge(..., @retentionPeriod(...)). Every
    granularity of the range is kept and read with its calendar bucket start."""
    rt = fed(NAMED_AGGREGATION)
    q = 'from TradeAggregation on symbol == "WSO2" within "2014-02-15 06:**:**" per "{}" select AGG_TIMESTAMP, total, avgPrice'
    assert data(rt.query(q.format("seconds"))) == [
        (ms("2014-02-15 06:00:00"), 20.0, 20.0),
        (ms("2014-02-15 06:59:59"), 40.0, 40.0),
    ]
    assert data(rt.query(q.format("minutes"))) == [
        (ms("2014-02-15 06:00:00"), 20.0, 20.0),
        (ms("2014-02-15 06:59:00"), 40.0, 40.0),
    ]
    assert data(rt.query(q.format("hours"))) == [(ms("2014-02-15 06:00:00"), 60.0, 30.0)]
    whole = 'from TradeAggregation on symbol == "WSO2" within "2014-**-** **:**:**" per "{}" select AGG_TIMESTAMP, total'
    assert data(rt.query(whole.format("days"))) == [
        (ms("2014-02-13 00:00:00"), 80.0),
        (ms("2014-02-14 00:00:00"), 10.0),
        (ms("2014-02-15 00:00:00"), 60.0),
        (ms("2014-03-15 00:00:00"), 60.0),
        (ms("2014-03-16 00:00:00"), 70.0),
    ]
    assert data(rt.query(whole.format("months"))) == [
        (ms("2014-02-01 00:00:00"), 150.0),
        (ms("2014-03-01 00:00:00"), 130.0),
    ]
    years = 'from TradeAggregation within "2014-**-** **:**:**" per "years" select AGG_TIMESTAMP, symbol, total, avgPrice'
    assert data(rt.query(years)) == [
        (ms("2014-01-01 00:00:00"), "WSO2", 280.0, 280.0 / 6),
        (ms("2014-01-01 00:00:00"), "FB", 80.0, 40.0),
    ]


def test_named_aggregation_example_purges_as_its_purge_annotation_says() -> None:
    """The example's @purge: every 10 seconds of the runtime's clock, second buckets more
    than 120 seconds old go, minute ones after 24 hours, hour ones after 30 days, day ones
    after a year; months and years stay. (Siddhi's purger runs on a timer from the app's
    start; here the interval counts from the first event or read, and the purge is done
    as events come and before a read.)"""
    t0 = ms("2014-02-15 06:00:00")
    rt = engine.compile(NAMED_AGGREGATION, start_time=t0)
    rt.send("TradeStream", [("WSO2", 10.0, 1, t0)], timestamps=t0)
    rt.send("TradeStream", [("WSO2", 20.0, 1, t0 + 5000)], timestamps=t0 + 5000)
    q = 'from TradeAggregation within 0L, 2000000000000L per "{}" select AGG_TIMESTAMP, total'
    assert data(rt.query(q.format("seconds"))) == [(t0, 10.0), (t0 + 5000, 20.0)]
    rt.advance_to(t0 + 121_000)  # the t0 second is older than 120 seconds now
    assert data(rt.query(q.format("seconds"))) == [(t0 + 5000, 20.0)]
    assert data(rt.query(q.format("minutes"))) == [(t0, 30.0)]
    rt.advance_to(t0 + 126_000)  # t0 + 5 s is older than 120 seconds, but no purge is due
    assert data(rt.query(q.format("seconds"))) == [(t0 + 5000, 20.0)]
    rt.advance_to(t0 + 131_000)  # 10 seconds after the last purge
    assert data(rt.query(q.format("seconds"))) == []
    rt.advance_to(t0 + 400 * 86_400_000)
    for per in ("minutes", "hours", "days"):
        assert rt.query(q.format(per)) == []
    assert data(rt.query(q.format("months"))) == [(ms("2014-02-01 00:00:00"), 30.0)]
    assert data(rt.query(q.format("years"))) == [(ms("2014-01-01 00:00:00"), 30.0)]


@pytest.mark.parametrize(
    ("annotation", "kept"),
    [
        ("", [50.0]),  # Siddhi's default: every 15 minutes, seconds kept 120 seconds
        ("@purge(enable='false') ", [10.0, 50.0]),
        ("@purge(interval='1 hour', @retentionPeriod(sec='10 min')) ", [10.0, 50.0]),
    ],
)
def test_purging_defaults_and_switching_it_off(annotation: str, kept: list[float]) -> None:
    """'Named Aggregation': without @purge, granularities are purged every 15 minutes with the
    default retentions of the guide's table; @purge(enable='false') keeps every bucket."""
    plan = NAMED_AGGREGATION.replace(
        NAMED_AGGREGATION[len(TRADE_STREAM) : NAMED_AGGREGATION.index("define aggregation")], annotation
    )
    t0 = ms("2014-02-15 06:00:00")
    rt = engine.compile(plan, start_time=t0)
    rt.send("TradeStream", [("WSO2", 10.0, 1, t0)], timestamps=t0)
    rt.send("TradeStream", [("WSO2", 20.0, 1, t0 + 16 * 60_000)], timestamps=t0 + 16 * 60_000)
    rt.send("TradeStream", [("WSO2", 30.0, 1, t0 + 16 * 60_000)], timestamps=t0 + 16 * 60_000)
    got = rt.query('from TradeAggregation within 0L, 2000000000000L per "seconds" select total')
    assert [e.data[0] for e in got] == kept


@pytest.mark.parametrize(
    "annotation",
    [
        # as WSO2's API Manager analytics and Siddhi's own purging tests write it
        "@purge(enable='true', interval='60 min', @retentionPeriod(sec='5 minutes', min='72 hours', "
        "hours='90 days', days='1 year', months='10 years'))",
        "@purge(enable='true',interval='1 min',@retentionPeriod(sec='120 sec',min='24 h',hours='30 day',"
        "days='5 year',months='13 months',years='5 years'))",
        "@Purge(enable='TRUE')",
    ],
)
def test_purge_annotations_as_shipped_plans_write_them(annotation: str) -> None:
    """Times are one amount and a unit as Siddhi's timeToLong reads them ('24 h', '30 day',
    '13 months': a month is 30 days, a year 365); the keys name durations the same way."""
    plan = NAMED_AGGREGATION.replace(
        NAMED_AGGREGATION[len(TRADE_STREAM) : NAMED_AGGREGATION.index("define aggregation")],
        annotation + "\n",
    )
    rt = engine.compile(plan, start_time=0)
    rt.send("TradeStream", FEBRUARY_TRADES, timestamps=0)
    assert len(rt.query('from TradeAggregation within "2014-**-** **:**:**" per "sec"')) == 8


@pytest.mark.parametrize(
    ("annotation", "words"),
    [
        ("@purge(enable='maybe')", "@purge enable takes 'true' or 'false', not 'maybe'"),
        ("@purge(interval='soon')", "@purge interval 'soon' is not a time such as '10 sec'"),
        ("@purge(@retentionPeriod(sec='60 sec'))", "is shorter than the minimum retention of 2 minutes"),
        ("@purge(@retentionPeriod(days='31 days'))", "shorter than the minimum retention of 46080 minutes"),
        ("@purge(@retentionPeriod(weeks='1 year'))", "not 'weeks'"),
        ("@purge(@retentionPeriod(min='forever'))", "min 'forever' is not a time such as '120 sec' or 'all'"),
        ("@purge(@retention(sec='1 year'))", "@purge takes @retentionPeriod(...), not @retention"),
    ],
)
def test_purge_annotation_mistakes(annotation: str, words: str) -> None:
    plan = NAMED_AGGREGATION.replace(
        NAMED_AGGREGATION[len(TRADE_STREAM) : NAMED_AGGREGATION.index("define aggregation")],
        annotation + "\n",
    )
    with pytest.raises(engine.QueryError, match=re.escape(words)):
        engine.compile(plan)
    narrow = plan.replace("sec ... year", "day ... year").replace(
        annotation, "@purge(@retentionPeriod(sec='1 year'))"
    )
    with pytest.raises(engine.QueryError, match="keeps no 'sec' buckets to purge"):
        engine.compile(narrow)


def test_named_aggregation_syntax_takes_a_string_timestamp_in_utc_or_with_an_offset() -> None:
    """'Named Aggregation' syntax, `by <timestamp attribute>`: a long of epoch milliseconds, or
    a string '<yyyy>-<MM>-<dd> <HH>:<mm>:<ss>' (GMT) or '... <Z>' with an ISO 8601 offset."""
    plan = NAMED_AGGREGATION.replace("timestamp long", "timestamp string")
    rt = engine.compile(plan, start_time=1000)
    rt.send(
        "TradeStream",
        [
            ("WSO2", 10.0, 1, "2014-02-15 06:00:00"),
            ("WSO2", 20.0, 1, "2014-02-15 11:30:30 +05:30"),  # 06:00:30 UTC
            ("WSO2", 40.0, 1, "2014-02-14 20:00:00 -11:00"),  # 2014-02-15 07:00 UTC
        ],
        timestamps=1000,
    )
    q = 'from TradeAggregation within "2014-02-15 **:**:**" per "{}" select AGG_TIMESTAMP, total'
    assert data(rt.query(q.format("minutes"))) == [
        (ms("2014-02-15 06:00:00"), 30.0),
        (ms("2014-02-15 07:00:00"), 40.0),
    ]
    assert data(rt.query(q.format("days"))) == [(ms("2014-02-15 00:00:00"), 70.0)]


@pytest.mark.parametrize(
    ("ignore", "expected"),
    [
        ("false", [(51000, 3), (52000, 1), (53000, 1), (54000, 1)]),
        ("true", [(51000, 2), (52000, 1), (53000, 1), (54000, 1)]),
    ],
)
def test_buffer_example_of_the_siddhi_4_guide(ignore: str, expected: list[tuple[int, int]]) -> None:
    """The Siddhi 4 guide's @BufferSize example (deprecated there, still accepted): with
    `sec ... year`, a buffer of 3 and events in the 51st to 54th seconds, the 51st to 53rd
    seconds are kept for out-of-order events; an event older than the buffer joins the
    oldest bucket in it, or is dropped with @IgnoreEventsOlderThanBuffer('true')."""
    plan = (
        "define stream S (v int, ts long);"
        f"@BufferSize('3') @IgnoreEventsOlderThanBuffer('{ignore}') "
        "define aggregation A from S select count() as n aggregate by ts every sec ... year;"
    )
    rt = engine.compile(plan, start_time=0)
    for second in (51, 52, 53, 54, 51, 50):  # then one more for the 51st, and one for the 50th
        rt.send("S", [(1, second * 1000 + 500)], timestamps=0)
    assert data(rt.query('from A within 0L, 100000L per "seconds"')) == expected


@pytest.mark.parametrize("annotation", ["@PartitionById", "@PartitionById(enable='false')"])
def test_distributed_aggregation_syntax_is_accepted_on_one_node(annotation: str) -> None:
    """'Distributed Aggregation': `@PartitionById` (or `(enable='false')`) splits the work
    over shards sharing an RDBMS @store in Siddhi; on one node with in-memory buckets it
    changes nothing, so the aggregation answers as without it. (The shards themselves
    need @store, which Cepheus does not ship.)"""
    plan = STORE_QUERY_AGGREGATION.replace("define aggregation", annotation + "\ndefine aggregation")
    got = fed(plan).query(
        'from TradeAggregation within "2014-02-15 **:**:**" per "days" select symbol, total'
    )
    assert data(got) == [("WSO2", 60.0), ("FB", 80.0)]


# ---- Join (Aggregation) ----------------------------------------------------------------------


def joined(query: str, probes: list[tuple[Any, ...]], stock_stream: str) -> list[tuple[Any, ...]]:
    plan = JOIN_AGGREGATION + stock_stream + query
    items: list[dict[str, Any]] = [
        {"stream": "TradeStream", "timestamp": 1000, "data": list(t)} for t in FEBRUARY_TRADES
    ]
    items += [{"stream": "StockStream", "timestamp": 2000 + i, "data": list(p)} for i, p in enumerate(probes)]
    return run(plan, items).rows("AggregateStockStream")


STOCK_STREAM = "define stream StockStream (symbol string, value int);"


def test_join_example_daily_aggregations_within_a_range_with_an_offset() -> None:
    """'Join (Aggregation)' example 1: daily aggregations within "2014-02-15 00:00:00 +05:30",
    "2014-03-16 00:00:00 +05:30" (2014-02-14 18:30 to 2014-03-15 18:30 UTC). Days are UTC
    calendar days: the one of 2014-02-14 starts before the range and is left out, although
    its 20:00 trade is inside it; the one of 2014-03-15 starts inside and is in."""
    query = (
        "from StockStream as S join TradeAggregation as T\n"
        "  on S.symbol == T.symbol\n"
        '  within "2014-02-15 00:00:00 +05:30", "2014-03-16 00:00:00 +05:30"\n'
        '  per "days"\n'
        "select S.symbol, T.total, T.avgPrice\n"
        "insert into AggregateStockStream;"
    )
    assert joined(query, [("WSO2", 1), ("FB", 2), ("ORCL", 3)], STOCK_STREAM) == [
        ("WSO2", 60.0, 30.0),  # 2014-02-15: 20 and 40
        ("WSO2", 60.0, 60.0),  # 2014-03-15
        ("FB", 80.0, 40.0),  # 2014-02-15: 30 and 50
    ]


def test_join_example_hourly_aggregations_within_a_day_given_with_wildcards_and_an_offset() -> None:
    """'Join (Aggregation)' example 2: hourly aggregations within "2014-02-15 **:**:** +05:30",
    the day of 2014-02-15 in +05:30 (2014-02-14 18:30 to 2014-02-15 18:30 UTC)."""
    query = (
        "from StockStream as S join TradeAggregation as T\n"
        "  on S.symbol == T.symbol\n"
        '  within "2014-02-15 **:**:** +05:30"\n'
        '  per "hours"\n'
        "select S.symbol, T.total, T.avgPrice\n"
        "insert into AggregateStockStream;"
    )
    assert joined(query, [("WSO2", 1), ("FB", 2)], STOCK_STREAM) == [
        ("WSO2", 10.0, 10.0),  # 2014-02-14 20:00 UTC
        ("WSO2", 60.0, 30.0),  # 2014-02-15 06:00 UTC
        ("FB", 30.0, 30.0),  # 2014-02-15 06:00 UTC; the 19:00 one is the next day in +05:30
    ]


def test_join_example_per_value_from_the_stream_within_epoch_milliseconds() -> None:
    """'Join (Aggregation)' example 3: `within 1496200000000L, 1596434876000L per S.perValue`
    (2017-05-31 03:06:40 to 2020-08-03 06:07:56 UTC), the granularity read from each event.
    The 2017 year and the May 2017 month start before the range: they are left out."""
    trades = [
        ("WSO2", 500.0, 1, ms("2017-05-29 23:20:00")),
        ("WSO2", 100.0, 1, 1496289950000),  # 2017-06-01 04:05:50
        ("WSO2", 200.0, 1, 1496383676000),  # 2017-06-02 06:07:56
        ("IBM", 900.0, 1, 1496383676000),
        ("WSO2", 300.0, 1, 1533276476000),  # 2018-08-03 06:07:56
        ("WSO2", 400.0, 1, 1596434876000),  # 2020-08-03 06:07:56, the range's end: its buckets start before
    ]
    plan = (
        JOIN_AGGREGATION
        + "define stream StockStream (symbol string, value int, perValue string);\n"
        + "from StockStream as S join TradeAggregation as T\n"
        "  on S.symbol == T.symbol\n"
        "  within 1496200000000L, 1596434876000L\n"
        "  per S.perValue\n"
        "select S.symbol, T.total, T.avgPrice\n"
        "insert into AggregateStockStream;"
    )
    items: list[dict[str, Any]] = [
        {"stream": "TradeStream", "timestamp": 1000, "data": list(t)} for t in trades
    ]
    for i, per in enumerate(["months", "years", "days"]):
        items.append({"stream": "StockStream", "timestamp": 2000 + i, "data": ["WSO2", 1, per]})
    assert run(plan, items).rows("AggregateStockStream") == [
        # months: June 2017, August 2018, August 2020
        ("WSO2", 300.0, 150.0),
        ("WSO2", 300.0, 300.0),
        ("WSO2", 400.0, 400.0),
        # years: 2018, 2020
        ("WSO2", 300.0, 300.0),
        ("WSO2", 400.0, 400.0),
        # days: 2017-06-01, 2017-06-02, 2018-08-03, 2020-08-03
        ("WSO2", 100.0, 100.0),
        ("WSO2", 200.0, 200.0),
        ("WSO2", 300.0, 300.0),
        ("WSO2", 400.0, 400.0),
    ]


def test_join_example_selects_agg_timestamp_in_the_definition() -> None:
    """The join examples' definition selects AGG_TIMESTAMP: it names the bucket start, which
    every aggregation has as its first attribute, so it is neither repeated nor moved."""
    rt = fed(JOIN_AGGREGATION)
    got = rt.query('from TradeAggregation within "2014-02-15 **:**:**" per "days"')
    assert data(got) == [
        (ms("2014-02-15 00:00:00"), "WSO2", 30.0, 60.0),
        (ms("2014-02-15 00:00:00"), "FB", 40.0, 80.0),
    ]


@pytest.mark.parametrize(
    "join",
    [
        "from StockStream as S left outer join TradeAggregation as T",
        "from TradeAggregation as T right outer join StockStream as S",
    ],
)
def test_join_example_supported_outer_joins_keep_unmatched_stream_events(join: str) -> None:
    """'Join (Aggregation)' -> Supported join types: a left outer join (stream on the left)
    or a right outer join (stream on the right) emits a stream event without matching
    aggregates once, with nulls for the aggregation's attributes."""
    query = (
        f"{join}\n"
        "  on S.symbol == T.symbol\n"
        '  within "2014-02-15 **:**:** +05:30"\n'
        '  per "hours"\n'
        "select S.symbol, T.total, T.avgPrice\n"
        "insert into AggregateStockStream;"
    )
    assert joined(query, [("ORCL", 1), ("FB", 2)], STOCK_STREAM) == [
        ("ORCL", None, None),
        ("FB", 30.0, 30.0),
    ]


def test_join_example_state_survives_snapshot_and_restore() -> None:
    """The join examples' aggregation, its buckets of every granularity restored from a
    snapshot taken after any event, answers as the uninterrupted one does."""
    plan = (
        JOIN_AGGREGATION
        + "define stream StockStream (symbol string, value int, perValue string);\n"
        + "from StockStream as S join TradeAggregation as T on S.symbol == T.symbol\n"
        '  within "2014-**-** **:**:**" per S.perValue\n'
        "select AGG_TIMESTAMP, S.symbol, T.total, T.avgPrice insert into AggregateStockStream;"
    )
    items: list[dict[str, Any]] = []
    pers = ["seconds", "minutes", "hours", "days", "months", "years"]
    for i, t in enumerate(FEBRUARY_TRADES):
        items.append({"stream": "TradeStream", "timestamp": 1000 + i, "data": list(t)})
        items.append({"stream": "StockStream", "timestamp": 1000 + i, "data": [t[0], i, pers[i % len(pers)]]})
    assert_restore_equivalent(plan, items)


# ---- Store Query: (Aggregation) Select ----------------------------------------------------------


def test_store_query_example_daily_aggregations_within_a_range() -> None:
    """'Store Query' -> '(Aggregation) Select' example 1."""
    rt = fed(STORE_QUERY_AGGREGATION)
    got = rt.query(
        "from TradeAggregation\n"
        '  within "2014-02-15 00:00:00 +05:30", "2014-03-16 00:00:00 +05:30"\n'
        '  per "days"\n'
        "select symbol, total, avgPrice ;"
    )
    assert data(got) == [("WSO2", 60.0, 30.0), ("FB", 80.0, 40.0), ("WSO2", 60.0, 60.0)]


def test_store_query_example_hourly_aggregations_of_one_symbol_within_a_day() -> None:
    """'Store Query' -> '(Aggregation) Select' example 2: the hours of "FB" on 2014-02-15
    (+05:30)."""
    rt = fed(STORE_QUERY_AGGREGATION)
    got = rt.query(
        "from TradeAggregation\n"
        '  on symbol == "FB"\n'
        '  within "2014-02-15 **:**:** +05:30"\n'
        '  per "hours"\n'
        "select symbol, total, avgPrice;"
    )
    assert data(got) == [("FB", 30.0, 30.0)]


def test_store_query_aggregation_select_syntax_with_group_by_having_order_by_and_limit() -> None:
    """'Store Query' -> '(Aggregation) Select' syntax: after `within ... per ...` the select
    takes `group by`, `having`, `order by` and `limit`, over the `per` buckets' rows."""
    rt = fed(STORE_QUERY_AGGREGATION)
    base = 'from TradeAggregation within "2014-**-** **:**:**" per "days" '
    got = rt.query(base + "select symbol, sum(total) as t group by symbol having t > 100.0 order by t desc")
    assert data(got) == [("WSO2", 280.0)]
    got = rt.query(base + "select AGG_TIMESTAMP, symbol, total order by total desc limit 1 offset 2")
    assert data(got) == [(ms("2014-03-16 00:00:00"), "WSO2", 70.0)]  # after the two 80s


# ---- Store Query: tables ----------------------------------------------------------------------

ROOMS = (
    "define stream RoomStream (roomNo int, type string, people int);"
    "{keys}define table RoomTypeTable (roomNo int, type string, people int);"
    "from RoomStream insert into RoomTypeTable;"
    "define table RoomOccupancyTable (roomNo int, people int);"
    "{keys}define table RoomAssigneeTable (roomNo int, type string, assignee string);"
)
ROOM_ROWS = [(8, "single", 1), (10, "double", 2), (12, "suite", 0)]


def rooms(keys: str = "") -> engine.Runtime:
    rt = engine.compile(ROOMS.format(keys=keys), start_time=1000)
    rt.send("RoomStream", ROOM_ROWS, timestamps=1000)
    return rt


def test_store_query_example_select_from_a_table() -> None:
    """'Store Query' -> '(Table/Window) Select': room numbers and types from room 10 on.
    (The guide prints `on roomNo >= 10;` with a stray semicolon before `select`; Siddhi's
    grammar ends a store query at its only `;`, so the query is run as meant.)"""
    rt = rooms()
    got = rt.query("from RoomTypeTable\non roomNo >= 10\nselect roomNo, type")
    assert data(got) == [(10, "double"), (12, "suite")]
    with pytest.raises(
        engine.QuerySyntaxError, match="expected the end of the on-demand query, found 'select'"
    ):
        rt.query("from RoomTypeTable\non roomNo >= 10;\nselect roomNo, type")


def test_store_query_example_select_from_a_named_window() -> None:
    """'Store Query' -> '(Table/Window) Select' on a window: what the window holds now."""
    rt = engine.compile(
        "define stream RoomStream (roomNo int, type string, people int);"
        "define window RoomWindow (roomNo int, type string, people int) length(2);"
        "from RoomStream insert into RoomWindow;",
        start_time=1000,
    )
    rt.send("RoomStream", ROOM_ROWS, timestamps=1000)
    assert data(rt.query("from RoomWindow on roomNo >= 10 select roomNo, type")) == [
        (10, "double"),
        (12, "suite"),
    ]
    assert data(rt.query("from RoomWindow on roomNo < 10 select roomNo, type")) == []


def test_store_query_example_insert() -> None:
    """'Store Query' -> 'Insert': `select 10 as roomNo, 2 as people insert into RoomOccupancyTable`."""
    rt = rooms()
    assert rt.query("select 10 as roomNo, 2 as people\ninsert into RoomOccupancyTable") == []
    assert data(rt.query("from RoomOccupancyTable select *")) == [(10, 2)]


@pytest.mark.parametrize(
    "delete",
    [
        "select 10 as roomNumber\ndelete RoomTypeTable\non RoomTypeTable.roomNo == roomNumber;",
        "delete RoomTypeTable\non RoomTypeTable.roomNo == 10;",
    ],
)
def test_store_query_example_delete(delete: str) -> None:
    """'Store Query' -> 'Delete', both examples: the record of room 10 goes."""
    rt = rooms()
    assert rt.query(delete) == []
    assert data(rt.query("from RoomTypeTable select roomNo")) == [(8,), (12,)]


@pytest.mark.parametrize(
    "update",
    [
        "select 10 as roomNumber, 1 as arrival\nupdate RoomTypeTable\n"
        "    set RoomTypeTable.people = RoomTypeTable.people + arrival\n"
        "    on RoomTypeTable.roomNo == roomNumber;",
        "update RoomTypeTable\n    set RoomTypeTable.people = RoomTypeTable.people + 1\n"
        "    on RoomTypeTable.roomNo == 10;",
    ],
)
def test_store_query_example_update(update: str) -> None:
    """'Store Query' -> 'Update', both examples: room 10 gets one more person, each time."""
    rt = rooms()
    rt.query(update)
    assert data(rt.query("from RoomTypeTable select roomNo, people")) == [(8, 1), (10, 3), (12, 0)]
    rt.query(update)
    assert data(rt.query("from RoomTypeTable on roomNo == 10 select people")) == [(4,)]


UPSERT = (
    'select 10 as roomNo, "single" as type, "abc" as assignee\n'
    "update or insert into RoomAssigneeTable\n"
    "    set RoomAssigneeTable.assignee = assignee\n"
    "    on RoomAssigneeTable.roomNo == roomNo;"
)


RETYPE = (
    "update RoomAssigneeTable set RoomAssigneeTable.type = 'double', RoomAssigneeTable.assignee = 'x' "
    "on RoomAssigneeTable.roomNo == 10"
)


def test_store_query_example_update_or_insert() -> None:
    """'Store Query' -> 'Update or Insert': room 10 has no record, so one is inserted from the
    selection; once it has one, only `set` applies to it (its type stays)."""
    rt = rooms()
    rt.query(UPSERT)
    assert data(rt.query("from RoomAssigneeTable select *")) == [(10, "single", "abc")]
    rt.query(RETYPE)
    rt.query(UPSERT)
    assert data(rt.query("from RoomAssigneeTable select *")) == [(10, "double", "abc")]
    rt.query(UPSERT.replace("10 as", "11 as"))
    assert data(rt.query("from RoomAssigneeTable select * order by roomNo")) == [
        (10, "double", "abc"),
        (11, "single", "abc"),
    ]


def test_store_query_example_update_or_insert_on_the_primary_key() -> None:
    """The 'Update or Insert' example with roomNo as the table's @PrimaryKey: its condition
    is exactly the key, so the selection replaces the record with that key whole, `set` or
    not (Siddhi's OverwriteTableIndexOperator does so), and is added when none has it."""
    rt = rooms("@PrimaryKey('roomNo') ")
    rt.query(UPSERT)
    assert data(rt.query("from RoomAssigneeTable select *")) == [(10, "single", "abc")]
    rt.query(RETYPE)
    assert data(rt.query("from RoomAssigneeTable select *")) == [(10, "double", "x")]
    rt.query(UPSERT)
    assert data(rt.query("from RoomAssigneeTable select *")) == [(10, "single", "abc")]
    rt.query(UPSERT.replace("10 as", "11 as"))
    assert data(rt.query("from RoomAssigneeTable select * order by roomNo")) == [
        (10, "single", "abc"),
        (11, "single", "abc"),
    ]
