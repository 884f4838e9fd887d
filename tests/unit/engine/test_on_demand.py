"""On-demand queries (`Runtime.query`), several ported from Siddhi's
OnDemandQueryTableTestCase and OnDemandQueryWindowTestCase with their expected results."""

from __future__ import annotations

import threading

import pytest

import engine

STOCKS = (
    "define stream StockStream (symbol string, price float, volume long);"
    "{keys}define table StockTable (symbol string, price float, volume long);"
    "from StockStream insert into StockTable;"
)


def stocks(rows: list[tuple[str, float, int]], keys: str = "") -> engine.Runtime:
    rt = engine.compile(STOCKS.format(keys=keys), start_time=1000)
    for row in rows:
        rt.send("StockStream", [row], timestamps=1000)
    return rt


THREE = [("WSO2", 55.6, 100), ("IBM", 75.6, 100), ("WSO2", 57.6, 100)]


def data(events: list[engine.Event]) -> list[tuple]:
    return [tuple(e.data) for e in events]


def test_from_table_with_on_conditions() -> None:  # Siddhi test1
    rt = stocks(THREE)
    assert len(rt.query("from StockTable ")) == 3
    assert data(rt.query("from StockTable on price > 75 ")) == [("IBM", pytest.approx(75.6), 100)]
    assert len(rt.query("from StockTable on price > volume*3/4  ")) == 1


def test_select_and_having() -> None:  # Siddhi test2
    rt = stocks(THREE)
    assert data(rt.query("from StockTable on price > 75 select symbol, volume")) == [("IBM", 100)]
    assert len(rt.query("from StockTable select symbol, volume")) == 3
    got = rt.query("from StockTable on price > 5 select symbol, volume having symbol == 'WSO2'")
    assert data(got) == [("WSO2", 100), ("WSO2", 100)]


def test_group_by_having() -> None:  # Siddhi test3
    rt = stocks(THREE)
    q = "from StockTable on price > 5 select symbol, sum(volume) as totalVolume group by symbol"
    assert data(rt.query(q + " having totalVolume > 150")) == [("WSO2", 200)]
    assert data(rt.query(q)) == [("WSO2", 200), ("IBM", 100)]
    assert len(rt.query(q + ", price")) == 3


def test_primary_key_order_by_limit_offset() -> None:  # Siddhi test7, test9 and more
    rt = stocks(THREE, "@PrimaryKey('symbol') ")
    assert data(rt.query("from StockTable on symbol == 'IBM' select symbol, volume")) == [("IBM", 100)]
    q = "from StockTable on volume > 10 select symbol, price, volume order by price"
    assert [round(r[1], 1) for r in data(rt.query(q + " limit 2"))] == [55.6, 75.6]
    assert [r[0] for r in data(rt.query(q + " desc limit 1"))] == ["IBM"]
    assert [r[0] for r in data(rt.query(q + " desc limit 5 offset 1"))] == ["WSO2"]


def test_aggregate_without_group_by_runs_afresh_each_time() -> None:  # Siddhi test10
    rt = stocks(THREE, "@PrimaryKey('symbol') ")
    q = "from StockTable on volume > 10 select symbol, price, sum(volume) as totalVolume"
    for _ in range(2):
        got = rt.query(q)
        assert len(got) == 1 and got[0].data[2] == 200


def test_empty_result_is_an_empty_list() -> None:
    rt = stocks(THREE)
    assert rt.query("from StockTable on volume > 1000") == []
    assert rt.query("from StockTable on volume > 1000 select sum(volume) as v") == []


def test_alias_and_qualified_names() -> None:
    rt = stocks(THREE)
    got = rt.query("from StockTable as s on s.price > 70 select s.symbol as sym, StockTable.volume as v")
    assert data(got) == [("IBM", 100)]


def test_update_or_insert_updates_matches_else_inserts() -> None:  # Siddhi test14, test15
    rows = [("WSO2", 55.6, 100), ("IBM", 75.6, 200), ("WSO2", 57.6, 300)]
    upsert = (
        'select "newSymbol" as symbol, 123.45f as price, 123L as volume update or insert into StockTable '
        "set StockTable.symbol = symbol, StockTable.price = price on StockTable.volume == {vol}L"
    )
    rt = stocks(rows)
    for _ in range(2):
        assert rt.query(upsert.format(vol=100)) == []
        got = data(rt.query("from StockTable select * having volume == 100L;"))
        assert got == [("newSymbol", pytest.approx(123.45), 100)]
    assert len(rt.query("from StockTable")) == 3
    rt.query(upsert.format(vol=500))
    assert len(rt.query("from StockTable select *;")) == 4
    assert data(rt.query("from StockTable select * having volume == 123L")) == [
        ("newSymbol", pytest.approx(123.45), 123)
    ]


def test_update_or_insert_on_primary_key() -> None:
    """On exactly the primary key the row replaces the one with its key, else is added;
    on another condition an unmatched row whose key exists is dropped (Siddhi logs it)."""
    rt = stocks([("WSO2", 55.6, 100), ("IBM", 75.6, 200)], "@PrimaryKey('symbol') ")
    on_key = "select '{s}' as symbol, 1.5f as price, {v}L as volume update or insert into StockTable on StockTable.symbol == symbol"
    rt.query(on_key.format(s="IBM", v=7))
    rt.query(on_key.format(s="ORCL", v=8))
    assert data(rt.query("from StockTable select symbol, volume order by symbol")) == [
        ("IBM", 7),
        ("ORCL", 8),
        ("WSO2", 100),
    ]
    other = "select 'WSO2' as symbol, 2.5f as price, 9L as volume update or insert into StockTable on StockTable.volume == volume"
    rt.query(other)  # no row has volume 9, and WSO2 is taken: dropped
    assert data(rt.query("from StockTable on symbol == 'WSO2' select volume")) == [(100,)]


def test_delete_with_and_without_select() -> None:  # Siddhi test16, test17
    rows = [("WSO2", 55.6, 100), ("IBM", 75.6, 200), ("GOOGLE", 57.6, 300)]
    rt = stocks(rows)
    rt.query("select 100L as vol delete StockTable on StockTable.volume == vol;")
    assert [r[0] for r in data(rt.query("from StockTable"))] == ["IBM", "GOOGLE"]
    rt.query("delete StockTable on StockTable.volume == 200L;")
    assert [r[0] for r in data(rt.query("from StockTable"))] == ["GOOGLE"]
    rt.query("delete StockTable")
    assert rt.query("from StockTable") == []


def test_insert_into() -> None:  # Siddhi test18
    rt = engine.compile(
        "define stream S (id int, symbol string, volume int); define table T (id int, symbol string, volume int);"
        "from S insert into T;"
    )
    rt.send("S", [(1, "WSO2", 100), (2, "IBM", 200), (3, "GOOGLE", 300)], timestamps=1)
    q = 'select 10 as id, "YAHOO" as symbol, 400 as volume insert into T;'
    rt.query(q)
    assert data(rt.query("from T select * having id == 10;")) == [(10, "YAHOO", 400)]
    rt.query(q)
    assert len(rt.query("from T select * having id == 10;")) == 2


@pytest.mark.parametrize(
    "update",
    [
        'update T set T.symbol="MICROSOFT", T.volume=2000 on T.id==2;',  # Siddhi test19
        'select "MICROSOFT" as newSymbol, 2000 as newVolume update T '  # Siddhi test20
        "set T.symbol=newSymbol, T.volume=newVolume on T.id==2;",
    ],
)
def test_update(update: str) -> None:
    rt = engine.compile(
        "define stream S (id int, symbol string, volume int); define table T (id int, symbol string, volume int);"
        "from S insert into T;"
    )
    rt.send("S", [(1, "WSO2", 100), (2, "IBM", 200), (3, "GOOGLE", 300)], timestamps=1)
    for _ in range(2):
        rt.query(update)
        assert len(rt.query("from T select *;")) == 3
        assert data(rt.query("from T select * having id == 2")) == [(2, "MICROSOFT", 2000)]


def test_named_window() -> None:  # after Siddhi's OnDemandQueryWindowTestCase
    rt = engine.compile(
        "define stream StockStream (symbol string, price float, volume long);"
        "define window StockWindow (symbol string, price float, volume long) length(2);"
        "from StockStream insert into StockWindow;"
    )
    rt.send("StockStream", [("WSO2", 55.6, 100), ("IBM", 75.6, 100)], timestamps=1000)
    rt.send("StockStream", [("WSO2", 57.6, 100)], timestamps=2000)
    got = rt.query("from StockWindow")
    assert [(e.timestamp, e.data[0]) for e in got] == [(1000, "IBM"), (2000, "WSO2")]
    got = rt.query("from StockWindow on price > 60 select symbol, volume")
    assert data(got) == [("IBM", 100)]
    assert data(rt.query("from StockWindow select sum(volume) as total")) == [(200,)]


def test_changes_are_known_before_running() -> None:
    rt = stocks(THREE)
    read = rt.prepare_query("from StockTable select symbol, volume")
    assert (read.changes, read.columns, read.target) == (False, ["symbol", "volume"], "StockTable")
    delete = rt.prepare_query("delete StockTable")
    assert delete.changes and delete.columns == []
    assert len(rt.query("from StockTable")) == 3  # preparing ran nothing
    rt.run_query(delete)
    assert rt.query("from StockTable") == []


def test_a_runtime_runs_only_what_it_prepared() -> None:
    one, other = stocks(THREE), stocks(THREE)
    with pytest.raises(engine.CEPError, match="not prepared"):
        other.run_query(one.prepare_query("delete StockTable"))
    assert len(one.query("from StockTable")) == 3


def test_shut_down_runtime_refuses() -> None:
    rt = stocks(THREE)
    rt.shutdown()
    with pytest.raises(engine.CEPError, match="shut down"):
        rt.query("from StockTable")


def test_query_waits_for_a_send_in_progress() -> None:
    """A query runs under the runtime's lock: it sees a chunk entirely or not at all."""
    started, release = threading.Event(), threading.Event()

    def slow(events: list[engine.Event]) -> None:
        started.set()
        release.wait(5)

    rt = engine.compile(
        STOCKS.format(keys="") + "from StockStream select * insert into Out;", start_time=1000
    )
    rt.subscribe("Out", slow)
    sender = threading.Thread(target=rt.send, args=("StockStream", THREE, 1000))
    sender.start()
    assert started.wait(5)
    counts: list[int] = []
    reader = threading.Thread(target=lambda: counts.append(len(rt.query("from StockTable"))))
    reader.start()
    reader.join(0.2)
    assert reader.is_alive()  # held back while the chunk is in flight
    release.set()
    sender.join(5)
    reader.join(5)
    assert counts == [3]


@pytest.mark.parametrize(
    ("text", "message", "col"),
    [
        ("from StockTable1", "'StockTable1' is not a table, named window or aggregation", 6),  # Siddhi test5
        ("from StockStream", "'StockStream' is a stream", 6),
        (
            "from StockTable on price > 5 select symbol1, sum(volume) as totalVolume",
            "unknown attribute 'symbol1'",
            37,
        ),
        ("from StockTable on symbol", "the 'on' condition must be a bool expression, found string", 20),
        (
            "from StockTable select symbol, volume order by price",
            "'order by price' must name an attribute",
            48,
        ),
        ("from StockTable within 0L, 1L per 'minutes' select *", "aggregations", 24),
        (
            "from StockTable select symbol1, sum(volume)  totalVolume",
            "this select expression needs a name",
            33,
        ),  # test6
        ("delete StockStream on StockStream.volume == 1L", "'StockStream' is not a table", 8),
        ("delete StockTable on volume == 1L", "unknown attribute 'volume'", 22),
        (
            "update StockTable set StockTable.volume = 'x' on StockTable.volume == 1L",
            "cannot set column 'volume'",
            43,
        ),
        ("select 1 as a insert into StockTable", "does not match table 'StockTable'", 27),
        (
            "select 'a' as symbol update or insert into StockTable on StockTable.symbol == symbol",
            "needs the select to match",
            44,
        ),
        ("update or insert into StockTable on StockTable.volume == 1L", "needs a select clause", 1),
        ("select * delete StockTable", "'select *' needs a 'from'", 1),
        ("select 1 as a", "expected 'insert into', 'delete', 'update'", 14),
        ("from StockTable select * limit 1 delete StockTable", "expected the end of the on-demand query", 34),
    ],
)
def test_errors_are_positioned(text: str, message: str, col: int) -> None:
    rt = stocks(THREE)
    with pytest.raises(engine.QueryError) as info:
        rt.query(text)
    assert message in str(info.value)
    assert (info.value.line, info.value.col) == (1, col)
    assert len(rt.query("from StockTable")) == 3  # nothing ran


def test_line_and_column_count_in_the_query_text() -> None:
    rt = stocks(THREE)
    with pytest.raises(engine.QueryValidationError) as info:
        rt.query("from StockTable\n  select nope")
    assert (info.value.line, info.value.col, info.value.end_col) == (2, 10, 14)
