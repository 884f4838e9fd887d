"""Incremental aggregation (`define aggregation`), its join and on-demand retrieval; several
cases ported from Siddhi's Aggregation1TestCase with their expected outputs (UTC)."""

from __future__ import annotations

import re
from typing import Any

import pytest

import engine
from engine.runtime.timebuckets import bucket_start, within_range
from tests.support.replaying import assert_restore_equivalent, run

STOCK = (
    "define stream stockStream (symbol string, price float, lastClosingPrice float, volume long, "
    "quantity int, timestamp long);"
)
AGG = (
    STOCK + "define aggregation stockAggregation from stockStream "
    "select symbol, avg(price) as avgPrice, sum(price) as totalPrice, (price * quantity) as lastTradeValue "
    "group by symbol aggregate by timestamp every {every};"
)
JOIN = (
    "define stream inputStream (symbol string, value int, startTime string, endTime string, perValue string);"
    "@info(name = 'query1') from inputStream as i join stockAggregation as s {within} "
    "select AGG_TIMESTAMP, s.symbol, avgPrice, totalPrice order by AGG_TIMESTAMP "
    "insert into outputStream;"
)

# Siddhi's incrementalStreamProcessorTest17/18 input: out of order at the start, then
# across months and years (Thursday, June 1, 2017 4:05:50 AM UTC onwards)
SPREAD: list[tuple[Any, ...]] = [
    ("WSO2", 50.0, 60.0, 90, 6, 1496289950000),
    ("WSO2", 70.0, None, 40, 10, 1496289950000),
    ("WSO2", 60.0, 44.0, 200, 56, 1496289952000),
    ("WSO2", 100.0, None, 200, 16, 1496289952000),
    ("WSO2", 50.0, 60.0, 90, 6, 1496289950000),
    ("WSO2", 70.0, None, 40, 10, 1496289950000),
    ("IBM", 100.0, None, 200, 26, 1496289954000),
    ("IBM", 100.0, None, 200, 96, 1496289954000),
    ("IBM", 900.0, None, 200, 60, 1496289956000),
    ("IBM", 500.0, None, 200, 7, 1496289956000),
    ("IBM", 400.0, None, 200, 9, 1496290016000),
    ("IBM", 600.0, None, 200, 6, 1496290076000),
    ("CISCO", 700.0, None, 200, 20, 1496293676000),
    ("WSO2", 60.0, 44.0, 200, 56, 1496297276000),
    ("CISCO", 800.0, None, 100, 10, 1496383676000),
    ("CISCO", 900.0, None, 100, 15, 1496470076000),
    ("IBM", 100.0, None, 200, 96, 1499062076000),
    ("IBM", 400.0, None, 200, 9, 1501740476000),
    ("WSO2", 60.0, 44.0, 200, 6, 1533276476000),
    ("WSO2", 260.0, 44.0, 200, 16, 1564812476000),
    ("CISCO", 260.0, 44.0, 200, 16, 1596434876000),
    ("CISCO", 260.0, 44.0, 200, 16, 1606975676000),
]


def send_all(rt: engine.Runtime, rows: list[tuple[Any, ...]], stream: str = "stockStream") -> None:
    for r in rows:
        rt.send(stream, [r], timestamps=1000)


def joined(
    every: str, within: str, probe: tuple[Any, ...], rows: list[tuple[Any, ...]]
) -> list[tuple[Any, ...]]:
    rt = engine.compile(AGG.format(every=every) + JOIN.format(within=within), start_time=1000)
    out: list[tuple[Any, ...]] = []
    rt.subscribe_chunks("outputStream", lambda _s, c: out.extend(tuple(r) for r in c.rows))
    send_all(rt, rows)
    rt.send("inputStream", [probe], timestamps=2000)
    return out


PROBE = ("IBM", 1, "2017-06-01 09:35:51 +05:30", "2017-06-01 09:35:52 +05:30", "seconds")
SPAN_2017_2021 = 'within "2017-01-01 00:00:00", "2021-01-01 00:00:00" per "{per}"'


def test_per_months_buckets_are_calendar_months() -> None:  # Siddhi test17
    got = joined("sec...year", SPAN_2017_2021.format(per="months"), PROBE, SPREAD)
    expected = [
        (1496275200000, "WSO2", 65.71428571428571, 460.0),
        (1496275200000, "CISCO", 800.0, 2400.0),
        (1496275200000, "IBM", 433.3333333333333, 2600.0),
        (1498867200000, "IBM", 100.0, 100.0),
        (1501545600000, "IBM", 400.0, 400.0),
        (1533081600000, "WSO2", 60.0, 60.0),
        (1564617600000, "WSO2", 260.0, 260.0),
        (1596240000000, "CISCO", 260.0, 260.0),
        (1606780800000, "CISCO", 260.0, 260.0),
    ]
    assert sorted(got) == sorted(expected)
    assert [r[0] for r in got] == sorted(r[0] for r in got)


def test_per_years_buckets_are_calendar_years() -> None:  # Siddhi test18
    got = joined("sec...year", SPAN_2017_2021.format(per="years"), PROBE, SPREAD)
    expected = [
        (1483228800000, "CISCO", 800.0, 2400.0),
        (1483228800000, "IBM", 387.5, 3100.0),
        (1483228800000, "WSO2", 65.71428571428571, 460.0),
        (1514764800000, "WSO2", 60.0, 60.0),
        (1546300800000, "WSO2", 260.0, 260.0),
        (1577836800000, "CISCO", 260.0, 520.0),
    ]
    assert sorted(got) == sorted(expected)


def test_month_and_year_boundaries_split_by_the_last_millisecond() -> None:
    dec31 = 1514764799999  # 2017-12-31 23:59:59.999 UTC
    jan1 = 1514764800000  # 2018-01-01 00:00:00.000 UTC
    feb28 = 1519862399999  # 2018-02-28 23:59:59.999 UTC, then March
    rows = [("A", 1.0, None, 0, 1, t) for t in (dec31, jan1, feb28, feb28 + 1)]
    rt = engine.compile(AGG.format(every="day, month, year"), start_time=0)
    send_all(rt, rows)
    months = rt.query(
        'from stockAggregation within "2017-**-** **:**:**" per "months" select AGG_TIMESTAMP, totalPrice'
    )
    assert [tuple(e.data) for e in months] == [(1512086400000, 1.0)]
    q = 'from stockAggregation within 0L, 2000000000000L per "{}" select AGG_TIMESTAMP, totalPrice'
    months = rt.query(q.format("months"))
    assert [tuple(e.data) for e in months] == [
        (1512086400000, 1.0),
        (jan1, 1.0),
        (1517443200000, 1.0),
        (feb28 + 1, 1.0),
    ]
    years = rt.query(q.format("years"))
    assert [tuple(e.data) for e in years] == [(1483228800000, 1.0), (jan1, 3.0)]


def test_on_demand_read_with_wildcards_per_seconds() -> None:  # Siddhi test5
    rt = engine.compile(AGG.format(every="sec...hour"), start_time=1000)
    send_all(
        rt,
        [
            ("WSO2", 50.0, 60.0, 90, 6, 1496289950000),
            ("WSO2", 70.0, None, 40, 10, 1496289950000),
            ("WSO2", 60.0, 44.0, 200, 56, 1496289952000),
            ("WSO2", 100.0, None, 200, 16, 1496289952500),
            ("IBM", 100.0, None, 200, 26, 1496289954000),
            ("IBM", 100.0, None, 200, 96, 1496289954500),
        ],
    )
    got = [
        tuple(e.data) for e in rt.query('from stockAggregation within "2017-06-** **:**:**" per "seconds"')
    ]
    assert got == [
        (1496289950000, "WSO2", 60.0, 120.0, 700.0),
        (1496289952000, "WSO2", 80.0, 160.0, 1600.0),
        (1496289954000, "IBM", 100.0, 200.0, 9600.0),
    ]
    assert rt.query('from stockAggregation within "2017-07-** **:**:**" per "seconds"') == []
    hours = rt.query(
        'from stockAggregation as a within "2017-06-01 **:**:**" per "hours" select a.symbol, totalPrice'
    )
    assert [tuple(e.data) for e in hours] == [("WSO2", 280.0), ("IBM", 200.0)]


def test_per_from_an_attribute_and_times_from_attributes() -> None:  # Siddhi test6
    plan = AGG.format(every="sec...year") + (
        "define stream inputStream (symbol string, value int, startTime string, endTime string, perValue string);"
        "@info(name = 'query1') from inputStream as i join stockAggregation as s "
        "within i.startTime, i.endTime per i.perValue "
        "select AGG_TIMESTAMP, s.symbol, avgPrice, totalPrice as sumPrice, lastTradeValue "
        "order by AGG_TIMESTAMP insert into outputStream;"
    )
    rows = [
        ("WSO2", 50.0, 60.0, 90, 6, 1496289950000),
        ("WSO2", 70.0, None, 40, 10, 1496289950000),
        ("WSO2", 50.0, 60.0, 90, 6, 1496289950000),
        ("WSO2", 70.0, None, 40, 10, 1496289950000),
        ("IBM", 100.0, None, 200, 26, 1496289951000),
        ("IBM", 100.0, None, 200, 96, 1496289951000),
        ("IBM", 900.0, None, 200, 60, 1496289952000),
        ("IBM", 500.0, None, 200, 7, 1496289952000),
        ("WSO2", 60.0, 44.0, 200, 56, 1496289953000),
        ("WSO2", 100.0, None, 200, 16, 1496289953000),
        ("IBM", 400.0, None, 200, 9, 1496289953000),
        ("WSO2", 140.0, None, 200, 11, 1496289953000),
        ("IBM", 600.0, None, 200, 6, 1496289954000),
        ("IBM", 1000.0, None, 200, 9, 1496290016000),
    ]
    items = [{"stream": "stockStream", "timestamp": 1000, "data": list(r)} for r in rows]
    seconds = ["IBM", 1, "2017-06-01 04:05:50", "2017-06-01 04:06:57", "seconds"]
    minutes = ["IBM", 1, "2017-06-01 04:05:50", "2017-06-01 04:06:57", "minutes"]
    items += [
        {"stream": "inputStream", "timestamp": 2000, "data": seconds},
        {"stream": "inputStream", "timestamp": 2001, "data": minutes},
    ]
    c = run(plan, items)
    assert c.rows("outputStream") == [
        (1496289950000, "WSO2", 60.0, 240.0, 700.0),
        (1496289951000, "IBM", 100.0, 200.0, 9600.0),
        (1496289952000, "IBM", 700.0, 1400.0, 3500.0),
        (1496289953000, "WSO2", 100.0, 300.0, 1540.0),
        (1496289953000, "IBM", 400.0, 400.0, 3600.0),
        (1496289954000, "IBM", 600.0, 600.0, 3600.0),
        (1496290016000, "IBM", 1000.0, 1000.0, 9000.0),
        # per minutes: a bucket is in the range when its start is; 04:05:00 starts before 04:05:50
        (1496289960000, "IBM", 1000.0, 1000.0, 9000.0),
    ]


def test_within_longs_per_days_without_group_by() -> None:  # Siddhi test9
    plan = STOCK + (
        "define aggregation stockAggregation from stockStream "
        "select avg(price) as avgPrice, sum(price) as totalPrice, (price * quantity) as lastTradeValue, "
        "count() as count aggregate by timestamp every min, day, year;"
        "define stream inputStream (symbol string, value int, startTime string, endTime string, perValue string);"
        'from inputStream as i join stockAggregation as s within 1496200000000L, 1596434876000L per "days" '
        "select AGG_TIMESTAMP, s.avgPrice, totalPrice, lastTradeValue, count order by AGG_TIMESTAMP "
        "insert into outputStream;"
    )
    rows = [
        ("WSO2", 50.0, 60.0, 90, 6, 1496289950000),
        ("WSO2", 70.0, None, 40, 10, 1496289950000),
        ("WSO2", 60.0, 44.0, 200, 56, 1496289952000),
        ("WSO2", 100.0, None, 200, 16, 1496289952000),
        ("IBM", 100.0, None, 200, 26, 1496289954000),
        ("IBM", 100.0, None, 200, 96, 1496289954000),
        ("IBM", 900.0, None, 200, 60, 1496289956000),
        ("IBM", 500.0, None, 200, 7, 1496289956000),
        ("IBM", 400.0, None, 200, 9, 1496290016000),
        ("IBM", 600.0, None, 200, 6, 1496290076000),
        ("CISCO", 700.0, None, 200, 20, 1496293676000),
        ("WSO2", 60.0, 44.0, 200, 56, 1496297276000),
        ("CISCO", 800.0, None, 100, 10, 1496383676000),
        ("CISCO", 900.0, None, 100, 15, 1496470076000),
        ("IBM", 100.0, None, 200, 96, 1499062076000),
        ("IBM", 400.0, None, 200, 9, 1501740476000),
        ("WSO2", 60.0, 44.0, 200, 6, 1533276476000),
        ("WSO2", 260.0, 44.0, 200, 16, 1564812476000),
        ("CISCO", 260.0, 44.0, 200, 16, 1596434876000),
    ]
    items = [{"stream": "stockStream", "timestamp": 1000, "data": list(r)} for r in rows]
    items.append({"stream": "inputStream", "timestamp": 2000, "data": ["IBM", 1, "", "", ""]})
    assert run(plan, items).rows("outputStream") == [
        (1496275200000, 303.3333333333333, 3640.0, 3360.0, 12),
        (1496361600000, 800.0, 800.0, 8000.0, 1),
        (1496448000000, 900.0, 900.0, 13500.0, 1),
        (1499040000000, 100.0, 100.0, 9600.0, 1),
        (1501718400000, 400.0, 400.0, 3600.0, 1),
        (1533254400000, 60.0, 60.0, 360.0, 1),
        (1564790400000, 260.0, 260.0, 4160.0, 1),
        (1596412800000, 260.0, 260.0, 4160.0, 1),  # starts before the range ends
    ]


def test_string_timestamps_with_and_without_an_offset() -> None:  # Siddhi test38
    plan = (
        STOCK.replace("timestamp long", "timestamp string")
        + "define aggregation stockAggregation from stockStream "
        "select avg(price) as avgPrice, sum(price) as totalPrice, (price * quantity) as lastTradeValue "
        "aggregate by timestamp every sec...year;"
        "define stream inputStream (symbol string, value int, startTime string, endTime string, perValue string);"
        "from inputStream join stockAggregation "
        'within "2017-06-01 09:35:00 +05:30", "2017-06-01 10:37:57 +05:30" per perValue '
        "select AGG_TIMESTAMP, avgPrice, totalPrice as sumPrice, lastTradeValue insert all events into outputStream;"
    )
    rows = [
        ("WSO2", 50.0, 60.0, 90, 6, "2017-06-01 04:05:50"),
        ("IBM", 50.0, 60.0, 90, 6, "2017-06-01 04:05:51"),
        ("WSO2", 60.0, 44.0, 200, 56, "2017-06-01 04:05:52"),
        ("WSO2", 100.0, None, 200, 16, "2017-06-01 04:05:52"),
        ("WSO2", 70.0, None, 40, 10, "2017-06-01 04:05:50"),
        ("IBM", 100.0, None, 200, 26, "2017-06-01 04:05:54"),
        ("IBM", 100.0, None, 200, 96, "2017-06-01 04:05:54"),
        ("IBM", 50.0, 60.0, 90, 6, "2017-06-01 04:05:50"),
        ("IBM", 900.0, None, 200, 60, "2017-06-01 04:05:56"),
        ("IBM", 500.0, None, 200, 7, "2017-06-01 04:05:56"),
        ("IBM", 400.0, None, 200, 9, "2017-06-01 04:06:56"),
        ("IBM", 600.0, None, 200, 6, "2017-06-01 04:07:56"),
        ("IBM", 700.0, None, 200, 20, "2017-06-01 05:07:56"),
    ]
    items = [{"stream": "stockStream", "timestamp": 1000, "data": list(r)} for r in rows]
    probe = ["IBM", 1, "2017-06-01 09:35:51 +05:30", "2017-06-01 09:35:52 +05:30", "minutes"]
    items.append({"stream": "inputStream", "timestamp": 2000, "data": probe})
    assert sorted(run(plan, items).rows("outputStream", "current")) == [
        (1496289900000, 198.0, 1980.0, 3500.0),
        (1496289960000, 400.0, 400.0, 3600.0),
        (1496290020000, 600.0, 600.0, 3600.0),
        (1496293620000, 700.0, 700.0, 14000.0),
    ]
    rt = engine.compile(plan, start_time=0)
    rt.send("stockStream", [("IBM", 5.0, None, 1, 1, "2017-06-01 09:36:10 +05:30")], timestamps=0)
    got = rt.query(
        'from stockAggregation within "2017-06-01 04:06:**" per "seconds" select AGG_TIMESTAMP, totalPrice'
    )
    assert [tuple(e.data) for e in got] == [(1496289970000, 5.0)]  # 04:06:10 UTC


def test_a_malformed_string_timestamp_fails_the_chunk_before_aggregating_it() -> None:  # Siddhi test16
    """Siddhi logs the malformed timestamp and drops its event; here the chunk fails with the
    value and the forms named, and nothing of it is aggregated."""
    plan = STOCK.replace("timestamp long", "timestamp string") + (
        "define aggregation A from stockStream select sum(price) as total aggregate by timestamp every sec, min;"
    )
    rt = engine.compile(plan, start_time=0)
    bad = [
        ("WSO2", 1.0, None, 1, 1, "2017-06-01 04:05:50"),
        ("WSO2", 2.0, None, 1, 1, "June 1, 2017 4:05:50 AM"),
    ]
    with pytest.raises(
        engine.ProcessingError, match=re.escape("timestamp 'June 1, 2017 4:05:50 AM' is not of the form")
    ):
        rt.send("stockStream", bad, timestamps=0)
    for text in ("2017-06-31 04:05:50", "2017-06-01T04:05:50", "2017-06-01 04:05:50 +0530"):
        with pytest.raises(engine.ProcessingError, match="is not of the form"):
            rt.send("stockStream", [("WSO2", 2.0, None, 1, 1, text)], timestamps=0)
    assert rt.query("from A within 0L, 2000000000000L per 'min'") == []
    rt.send("stockStream", [("WSO2", 3.0, None, 1, 1, None)], timestamps=0)  # a null timestamp: skipped
    assert rt.query("from A within 0L, 2000000000000L per 'min'") == []


def test_a_plain_attribute_keeps_the_newest_events_value_when_events_come_out_of_order() -> None:
    """On an `aggregate by` timestamp, a plain attribute takes the value of the bucket's
    event with the newest timestamp, the later of equal ones, in every duration (Siddhi's
    BaseIncrementalValueStore checks the last timestamp so); on event time, the last one."""
    plan = (
        "define stream S (v int, ts long);"
        "define aggregation A from S select v as last, count() as n aggregate by ts every sec, min;"
    )
    rt = engine.compile(plan, start_time=0)
    for v, ts in [(1, 5500), (2, 5900), (3, 5100), (4, 1000)]:
        rt.send("S", [(v, ts)], timestamps=0)
    rt.send("S", [(5, 5200), (6, 5900), (7, 5300)], timestamps=0)  # one chunk, out of order inside
    q = "from A within 0L, 100000L per '{}' select AGG_TIMESTAMP, last, n"
    assert [tuple(e.data) for e in rt.query(q.format("sec"))] == [(1000, 4, 1), (5000, 6, 6)]
    assert [tuple(e.data) for e in rt.query(q.format("min"))] == [(0, 6, 7)]
    on_event_time = engine.compile(plan.replace("aggregate by ts", "aggregate"), start_time=0)
    on_event_time.send("S", [(1, 0), (2, 0), (3, 0)], timestamps=[5500, 5900, 5900])
    assert [tuple(e.data) for e in on_event_time.query(q.format("sec"))] == [(5000, 3, 3)]


def test_restore_with_string_timestamps_plain_attributes_and_a_buffer() -> None:
    plan = (
        "define stream S (k string, v int, ts string);"
        "@BufferSize('1') define aggregation A from S select k, v as last, sum(v) as total, distinctCount(v) as d "
        "group by k aggregate by ts every sec...min;"
        "define stream Q (k string, per string);"
        "from Q join A on A.k == Q.k within 0L, 1000000L per Q.per "
        "select AGG_TIMESTAMP, last, total, d insert into Out;"
    )
    events = [
        ("a", 1, "1970-01-01 00:00:05"),
        ("a", 2, "1970-01-01 00:00:03"),  # older than the buffer: into the oldest bucket
        ("a", 3, "1970-01-01 00:00:04"),
        ("b", 4, "1970-01-01 00:01:05 +00:00"),
        ("a", 5, "1970-01-01 00:00:05"),
        ("a", 6, "1970-01-01 05:30:06 +05:30"),
    ]
    items: list[dict[str, Any]] = []
    for i, row in enumerate(events):
        items.append({"stream": "S", "timestamp": 1000 + i, "data": list(row)})
        items.append({"stream": "Q", "timestamp": 1000 + i, "data": ["a", "sec" if i % 2 else "min"]})
    assert_restore_equivalent(plan, items)


def test_restore_keeps_when_the_next_purge_is_due() -> None:
    plan = (
        "define stream S (v int, ts long);"
        "@purge(interval='1 min', @retentionPeriod(sec='120 sec')) "
        "define aggregation A from S select sum(v) as total aggregate by ts every sec, min;"
        "define stream Q (per string);"
        "from Q join A within 0L, 100000000L per Q.per select AGG_TIMESTAMP, total insert into Out;"
    )
    items: list[dict[str, Any]] = []
    for i, t in enumerate([1000, 30_000, 70_000, 100_000, 140_000, 175_000, 200_000, 260_000]):
        items.append({"stream": "S", "timestamp": t, "data": [i + 1, t - 500]})
        items.append({"stream": "Q", "timestamp": t, "data": ["sec" if i % 3 else "min"]})
    items.append({"time": 400_000})
    items.append({"stream": "Q", "timestamp": 400_000, "data": ["sec"]})
    assert_restore_equivalent(plan, items, start_time=0)


def test_a_snapshot_from_before_the_newest_timestamp_slot_restores() -> None:
    """States of an engine that kept no newest-timestamp slot for plain attributes (and no
    purge time) restore with the slot empty: the next event of the bucket sets it."""
    plan = (
        "define stream S (v int, ts long);"
        "define aggregation A from S select v as last, sum(v) as total aggregate by ts every sec;"
    )
    first = engine.compile(plan, start_time=0)
    first.send("S", [(1, 5000), (2, 5100)], timestamps=0)
    capture = first.capture()
    for _part, state in capture.states:
        if isinstance(state, dict) and "store" in state:
            del state["next_purge"]
            for _d, buckets in state["store"]:
                for _b, groups in buckets:
                    for entry in groups:
                        entry[1] = entry[1][:-1]
    second = engine.compile(plan, start_time=0)
    second.restore(capture.encode())
    q = "from A within 0L, 100000L per 'sec' select last, total"
    assert [tuple(e.data) for e in second.query(q)] == [(2, 3)]
    second.send("S", [(7, 5050)], timestamps=0)
    assert [tuple(e.data) for e in second.query(q)] == [(7, 10)]  # no newest timestamp was kept
    second.send("S", [(8, 5010)], timestamps=0)
    assert [tuple(e.data) for e in second.query(q)] == [(7, 18)]


MINMAX = (
    "define stream S (k string, v int, ts long);"
    "{ann}define aggregation A from S select k, sum(v) as total, min(v) as lo, max(v) as hi, count() as n, "
    "distinctCount(v) as d group by k aggregate by ts every sec...min;"
)


def secs(rt: engine.Runtime, per: str = "seconds") -> list[tuple[Any, ...]]:
    return [tuple(e.data) for e in rt.query(f'from A within 0L, 100000000L per "{per}"')]


def test_out_of_order_events_land_in_their_own_buckets() -> None:
    rt = engine.compile(MINMAX.format(ann=""), start_time=0)
    for v, ts in [(1, 5000), (2, 7000), (3, 5500), (4, 1000), (4, 7100)]:
        rt.send("S", [("a", v, ts)], timestamps=0)
    assert secs(rt) == [
        (1000, "a", 4, 4, 4, 1, 1),
        (5000, "a", 4, 1, 3, 2, 2),
        (7000, "a", 6, 2, 4, 2, 2),
    ]
    assert secs(rt, "minutes") == [(0, "a", 14, 1, 4, 5, 4)]


def test_buffer_keeps_recent_buckets_and_folds_older_events_into_the_oldest() -> None:
    rt = engine.compile(MINMAX.format(ann="@BufferSize('2') "), start_time=0)
    for v, ts in [(1, 10000), (2, 9000), (3, 8000), (4, 3000)]:
        rt.send("S", [("a", v, ts)], timestamps=0)
    # 9 and 8 are inside a buffer of 2 seconds before 10; 3 is older: it joins 8
    assert secs(rt) == [(8000, "a", 7, 3, 4, 2, 2), (9000, "a", 2, 2, 2, 1, 1), (10000, "a", 1, 1, 1, 1, 1)]


def test_events_older_than_the_buffer_are_dropped_when_asked() -> None:
    rt = engine.compile(
        MINMAX.format(ann="@BufferSize('2') @IgnoreEventsOlderThanBuffer('true') "), start_time=0
    )
    for v, ts in [(1, 10000), (2, 9000), (3, 8000), (4, 3000), (5, 7000)]:
        rt.send("S", [("a", v, ts)], timestamps=0)
    assert secs(rt) == [(8000, "a", 3, 3, 3, 1, 1), (9000, "a", 2, 2, 2, 1, 1), (10000, "a", 1, 1, 1, 1, 1)]


def test_one_chunk_with_several_keys_and_buckets() -> None:
    rt = engine.compile("@PartitionById " + MINMAX.format(ann=""), start_time=0)
    rt.send(
        "S", [("a", 1, 1000), ("b", 2, 1200), ("a", 3, 1900), ("a", 1, 2000), ("b", None, 2500)], timestamps=0
    )
    assert secs(rt) == [
        (1000, "a", 4, 1, 3, 2, 2),
        (1000, "b", 2, 2, 2, 1, 1),
        (2000, "a", 1, 1, 1, 1, 1),
        (2000, "b", None, None, None, 1, 1),  # count() counts the null; sum of no values is null
    ]


def test_without_aggregate_by_the_event_time_is_used_and_filters_apply() -> None:
    plan = "define stream S (k string, v double); define aggregation A from S[v > 0.0] select sum(v) as s aggregate every sec, hour;"
    rt = engine.compile(plan, start_time=0)
    rt.send("S", [("a", 1.5, 0), ("a", -9.0, 0)], timestamps=[3_600_500, 3_600_900])
    rt.send("S", [("a", 2.0, 0)], timestamps=3_601_000)
    got = [tuple(e.data) for e in rt.query('from A within "1970-01-01 01:**:**" per "sec"')]
    assert got == [(3_600_000, 1.5), (3_601_000, 2.0)]
    got = [tuple(e.data) for e in rt.query('from A within "1970-01-01 **:**:**" per "hours"')]
    assert got == [(3_600_000, 3.5)]


def test_on_demand_read_with_on_group_by_and_order() -> None:
    rt = engine.compile(MINMAX.format(ann=""), start_time=0)
    rt.send("S", [("a", 1, 1000), ("b", 5, 1000), ("a", 2, 3000)], timestamps=0)
    q = 'from A on total > 1 within 0L, 10000L per "seconds" select k, sum(total) as t group by k order by t desc'
    assert [tuple(e.data) for e in rt.query(q)] == [("b", 5), ("a", 2)]


def test_restore_is_equivalent_at_every_cut_point() -> None:
    plan = MINMAX.format(ann="") + (
        "define stream Q (k string, per string);"
        "from Q join A on A.k == Q.k within 0L, 1000000L per Q.per select AGG_TIMESTAMP, total, d insert into Out;"
    )
    items: list[dict[str, Any]] = []
    for i, (k, v, ts) in enumerate(
        [("a", 1, 1000), ("b", 2, 1500), ("a", 3, 61000), ("a", 3, 2000), ("b", 4, 62000)]
    ):
        items.append({"stream": "S", "timestamp": 1000 + i, "data": [k, v, ts]})
        items.append({"stream": "Q", "timestamp": 1000 + i, "data": ["a", "seconds" if i % 2 else "minutes"]})
    assert_restore_equivalent(plan, items)


@pytest.mark.parametrize(
    ("plan", "words"),
    [
        (MINMAX.format(ann="").replace("sum(v)", "sum(k)"), "sum() needs a numeric argument, found string"),
        (MINMAX.format(ann="").replace("group by k", "group by nope"), "unknown attribute 'nope'"),
        (
            MINMAX.format(ann="").replace("by ts", "by v"),
            "'aggregate by' needs a long (epoch ms) or string timestamp attribute, found int",
        ),
        (
            MINMAX.format(ann="").replace("sec...min", "sec...fortnight"),
            "'fortnight' is not an aggregation duration",
        ),
        (MINMAX.format(ann="").replace("sec...min", "hour...sec"), "runs backwards"),
        (MINMAX.format(ann="").replace("from S", "from Nope"), "'Nope' is not a stream"),
        (
            MINMAX.format(ann="").replace("count() as n", "sum(v) / count() as n"),
            "not an incremental aggregate",
        ),
        (MINMAX.format(ann="").replace("sum(v)", "stdDev(v)"), "not an incremental aggregate"),
        (
            MINMAX.format(ann="")
            .replace("ts long", "AGG_TIMESTAMP long")
            .replace("select k", "select AGG_TIMESTAMP, k"),
            "the aggregation outputs 'AGG_TIMESTAMP' twice",
        ),
        (MINMAX.format(ann="@BufferSize('x') "), "@BufferSize needs a whole number"),
        (
            MINMAX.format(ann="") + "define stream Q (a int); from Q join A select total insert into O;",
            "needs 'within",
        ),
        (
            MINMAX.format(ann="")
            + 'define stream Q (a int); from Q join A within "2017-06-** 12:**:**" per "hours" '
            "select total insert into O;",
            "wildcards must run to the end",
        ),
        (
            MINMAX.format(ann="")
            + 'define stream Q (a int); from Q join A within 0L, 1L per "days" select total insert into O;',
            "keeps no 'days' buckets",
        ),
        (
            MINMAX.format(ann="")
            + "define stream Q (a int); from Q join A within 0L, 1L per Q.a select total insert into O;",
            "duration string",
        ),
    ],
)
def test_mistakes_are_positioned_query_errors(plan: str, words: str) -> None:
    with pytest.raises(engine.QueryError, match=re.escape(words)) as info:
        engine.compile(plan)
    assert info.value.line >= 1 and info.value.col >= 1


@pytest.mark.parametrize(
    ("query", "words", "col"),
    [
        (
            'from A within "2017-06-02 00:00:00", "2017-06-01 00:00:00" per "hours"',
            "ends before it starts",
            15,
        ),  # test28
        ('from A within "2017-06-** **:**:**:1000" per "hours"', "is not a time", 15),  # test29
        ('from A within "2017-06-** 12:**:**" per "hours"', "wildcards must run to the end", 15),  # test30
        ('from A within "2017-06-** **:**:**" per 1000', "duration string", 41),  # test27
        ('from A within "2017-06-** **:**:**" per "weeks"', "not a duration", 41),
        ("from A select k", "needs 'within", 6),
    ],
)
def test_on_demand_mistakes(query: str, words: str, col: int) -> None:
    rt = engine.compile(MINMAX.format(ann=""), start_time=0)
    with pytest.raises(engine.QueryError, match=re.escape(words)) as info:
        rt.query(query)
    assert info.value.col == col


def test_a_per_value_from_an_event_is_checked_when_it_comes() -> None:
    plan = MINMAX.format(ann="") + (
        "define stream Q (p string); from Q join A within 0L, 10L per Q.p select total insert into O;"
    )
    rt = engine.compile(plan, start_time=0)
    with pytest.raises(engine.ProcessingError, match="keeps no 'hours' buckets"):
        rt.send("Q", [("hours",)], timestamps=0)


def test_time_helpers() -> None:
    assert bucket_start(1496289950123, "month") == 1496275200000
    assert bucket_start(1496289950123, "year") == 1483228800000
    assert bucket_start(-1, "sec") == -1000
    assert within_range("2017-06-** **:**:**") == (1496275200000, 1498867200000)
    assert within_range("2017-12-** **:**:**") == (1512086400000, 1514764800000)
    assert within_range("2017-**-** **:**:** +05:30") == (1483209000000, 1514745000000)
    assert within_range("2017-06-01 04:05:50") == (1496289950000, 1496289951000)
    assert within_range(5, 7, two=True) == (5, 7)
