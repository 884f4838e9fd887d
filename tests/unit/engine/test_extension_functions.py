"""The `str:`, `time:` and `math:` functions of the extensions WSO2 shipped with CEP 4, SP 4
and SI: results as the extensions' documentation gives them (dates in UTC)."""

from __future__ import annotations

import re
from typing import Any

import pytest

import engine
from tests.support.replaying import run

ATTRS = "i int, l long, f float, d double, s string, t string"


def select(expr: str, row: tuple[Any, ...] = (1, 0, 0.0, 0.0, "", ""), ts: int = 1000) -> Any:
    plan = f"define stream S ({ATTRS}); from S select {expr} as x insert into Out;"
    c = run(plan, [{"stream": "S", "timestamp": ts, "data": list(row)}])
    (out,) = c.rows("Out")
    return out[0]


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("str:concat('D533', ' ', 'To', ' ', 'Colombo')", "D533 To Colombo"),
        ("str:concat(s, '@', i)", "@1"),  # a null argument is skipped; numbers as Java prints them
        ("str:concat('v', 2.5, true)", "v2.5true"),
        ("str:length('Hello World')", 11),
        ("str:substr('AbCDefghiJ KLMN', 4)", "efghiJ KLMN"),
        ("str:substr('AbCDefghiJ KLMN', 2, 4)", "CDef"),
        ("str:substr('WSO2D efghiJ KLMN', '^WSO2(.*)')", "WSO2D efghiJ KLMN"),
        ("str:substr('WSO2 cep WSO2 XX E hi hA WSO2 heAllo', 'WSO2(.*)A(.*)', 2)", "llo"),
        ("str:substr('abc', 'x+')", ""),
        ("str:contains('21 products are produced by WSO2 currently', 'WSO2')", True),
        ("str:contains('abc', 'WSO2')", False),
        ("str:charAt('WSO2', 1)", "S"),
        ("str:strcmp('AbCDefghiJ KLMN', 'Hello')", -7),
        ("str:strcmp('abc', 'abcde')", -2),
        ("str:lower('WsO2')", "wso2"),
        ("str:upper('WsO2')", "WSO2"),
    ],
)
def test_string_functions(expr: str, value: Any) -> None:
    plan_row = (1, 0, 0.0, 0.0, None, "")
    assert select(expr, plan_row) == value


def test_contains_of_null_is_false_and_length_of_null_fails() -> None:
    assert select("str:contains(s, 'a')", (1, 0, 0.0, 0.0, None, "")) is False
    plan = f"define stream S ({ATTRS}); from S select str:length(s) as x insert into Out;"
    with pytest.raises(engine.ProcessingError, match=r"str:length\(\).*cannot be null"):
        run(plan, [{"stream": "S", "timestamp": 1000, "data": [1, 0, 0.0, 0.0, None, ""]}])


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("math:ceil(423.187d)", 424.0),
        ("math:ceil(-1.5f)", -1.0),
        ("math:floor(10.9)", 10.0),
        ("math:floor(7)", 7.0),
        ("math:round(3.35)", 3),
        ("math:round(-2.5)", -2),
        ("math:round(2.5f)", 3),
        ("math:power(2, 10)", 1024.0),
        ("math:ln(1)", 0.0),
        ("math:getExponent(60984.1)", 15),
        ("math:parseLong('-123')", -123),
    ],
)
def test_math_functions(expr: str, value: Any) -> None:
    got = select(expr)
    assert got == value and type(got) is type(value)


def test_result_types_follow_the_extensions() -> None:
    plan = (
        "define stream S (f float, d double, l long); from S select math:round(f) as a, math:round(d) as b, "
        "math:ceil(f) as c, time:extract(l, 'year') as e, time:dateSub(l, 1, 'day') as g, "
        "str:length('x') as h, str:contains('x', 'y') as k insert into Out;"
    )
    rt = engine.compile(plan)
    try:
        kinds = [k for _, k in rt.attributes("Out")]
    finally:
        rt.shutdown()
    T = engine.AttrType
    assert kinds == [T.INT, T.LONG, T.DOUBLE, T.INT, T.STRING, T.INT, T.BOOL]


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        # 1394556804000 is 2014-03-11 16:53:24 UTC
        ("time:extract(1394556804000L, 'hour')", 16),
        ("time:extract(1394556804000L, 'MONTH')", 3),
        ("time:extract(1394556804000L, 'quarter')", 1),
        ("time:extract('YEAR', '2019-03-04 12:00:00.000')", 2019),
        ("time:extract('DAY', '2014-3-11 02:23:44', 'yyyy-MM-dd hh:mm:ss')", 11),
        ("time:extract('HOUR', '2014-03-11 02:23:44 PM', 'yyyy-MM-dd hh:mm:ss a')", 14),
        # Java's US week: 31 Dec 2019 (a Tuesday) is in the week of 1 Jan 2020, week 1
        ("time:extract(1577750400000L, 'week')", 1),
        ("time:extract(1394556804000L, 'week')", 11),
        ("time:timestampInMilliseconds('2007-11-30 10:30:19', 'yyyy-MM-dd HH:mm:ss')", 1196418619000),
        ("time:timestampInMilliseconds('2007-11-30 10:30:19.250')", 1196418619250),
        ("time:timestampInMilliseconds('20071130', 'yyyyMMdd')", 1196380800000),
        ("time:timestampInMilliseconds('Nov 30, 2007', 'MMM dd, yyyy')", 1196380800000),
        ("time:dateFormat(1415712224000L, 'yyyy-MM-dd')", "2014-11-11"),
        ("time:dateFormat(1415712224000L, 'EEE, d MMM yyyy HH:mm:ss Z')", "Tue, 11 Nov 2014 13:23:44 +0000"),
        ("time:dateFormat('2014/11/11 13:23:44', 'mm:ss', 'yyyy/MM/dd HH:mm:ss')", "23:44"),
        ("time:dateFormat('2014-11-11 13:23:44.657', 'yyyy/MM/dd')", "2014/11/11"),
        (
            "time:dateSub('2014-11-11 13:23:44.657', 5, 'YEAR', 'yyyy-MM-dd HH:mm:ss.SSS')",
            "2009-11-11 13:23:44.657",
        ),
        ("time:dateSub('2016-03-31 00:00:00.000', 1, 'MONTH')", "2016-02-29 00:00:00.000"),
        ("time:dateSub(1415712224000L, 1, 'DAY')", "1415625824000"),
        ("time:dateAdd(1415712224000L, 2, 'HOUR')", "1415719424000"),
    ],
)
def test_time_functions(expr: str, value: Any) -> None:
    assert select(expr) == value


def test_time_now_functions_read_the_plans_clock() -> None:
    ts = 1415712224000  # 2014-11-11 13:23:44 UTC
    assert select("time:timestampInMilliseconds()", ts=ts) == ts
    assert select("time:currentDate()", ts=ts) == "2014-11-11"
    assert select("time:currentTime()", ts=ts) == "13:23:44"
    assert select("time:currentTimestamp()", ts=ts) == "2014-11-11 13:23:44"
    assert select("time:utcTimestamp()", ts=ts) == "2014-11-11 13:23:44"


def test_unparseable_date_fails_the_chunk() -> None:
    plan = (
        f"define stream S ({ATTRS}); "
        "from S select time:timestampInMilliseconds(s, 'yyyy-MM-dd') as x insert into Out;"
    )
    with pytest.raises(engine.ProcessingError, match="Unparseable date"):
        run(plan, [{"stream": "S", "timestamp": 1000, "data": [1, 0, 0.0, 0.0, "11/11/2014", ""]}])


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("str:concat(s)", "str:concat() takes at least 2 arguments, got 1"),
        ("str:length(i)", "the first argument of str:length() must be string, found int"),
        ("str:substr(s, 1.5)", "the second argument of str:substr() must be int or string, found double"),
        ("str:substr(s, '(')", "str:substr(): bad regular expression"),
        ("math:round(i)", "the first argument of math:round() must be double or float, found int"),
        ("time:extract(l, 'fortnight')", "unknown unit 'fortnight' in time:extract()"),
        ("time:extract(l, t)", "time:extract() takes a constant string here"),
        ("time:dateFormat(l, 'yyyy-MM-dd q')", "illegal pattern character 'q'"),
        ("time:dateSub(l, 1, 'DAY', 'x', 'y')", "time:dateSub() takes 3 or 4 arguments, got 5"),
    ],
)
def test_bad_calls_are_refused_with_their_position(expr: str, message: str) -> None:
    plan = f"define stream S ({ATTRS});\nfrom S select {expr} as x insert into Out;"
    with pytest.raises(engine.QueryError) as info:
        engine.compile(plan)
    d = info.value.errors[0]
    assert message in d.message
    assert d.line == 2 and 15 <= d.col < 15 + len(expr)


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("regex:matches('chocolate(.*)', 'chocolate cake')", True),
        ("regex:matches('chocolate', 'chocolate cake')", False),  # the whole text must match
        ("regex:lookingAt('chocolate', 'chocolate cake')", True),
        ("regex:lookingAt('cake', 'chocolate cake')", False),
        ("regex:find('cake', 'chocolate cake')", True),
        ("regex:find('choc', 'chocolate cake', 3)", False),
        ("regex:find('\\d+', s)", False),  # a null text: false
        ("regex:group('.*\\s(.*)', 'chocolate cake', 1)", "cake"),
        ("regex:group('(\\d+)', 'no digits', 1)", None),
        ("regex:group('(\\w+)', 'word', 2)", None),  # no such group: null
    ],
)
def test_regex_functions(expr: str, value: Any) -> None:
    assert select(expr, (1, 0, 0.0, 0.0, None, "")) == value


def test_regex_bad_pattern_is_refused() -> None:
    with pytest.raises(engine.QueryError, match=r"regex:matches\(\): bad regular expression"):
        engine.compile(
            f"define stream S ({ATTRS}); from S select regex:matches('(', s) as x insert into Out;"
        )


def test_map_functions_build_and_read_maps_across_queries() -> None:
    plan = (
        "define stream S (item string, price double);"
        "from S select map:put(map:create(), item, price) as m insert into M;"
        "from M select map:get(m, 'cake') as got, map:get(m, 'nope', 0.0) as dflt, map:containsKey(m, 'cake') as k,"
        " map:containsValue(m, 2.5) as v, map:size(map:put(map:clone(m), 'x', 1.0)) as n2, map:size(m) as n,"
        " map:isMap(m) as isMap, map:isMap('x') as notMap, map:isEmpty(map:remove(map:clone(m), 'cake')) as empty,"
        " map:keys(m) as keys, map:toJSON(map:replace(m, 'cake', 3.0)) as js insert into Out;"
        "from S select map:get(map:createFromJSON('{\"a\": {\"b\": 1}}'), 'a') as nested,"
        " map:create('k1', 1, 'k2', 'two') as made insert into J;"
    )
    c = run(plan, [{"stream": "S", "timestamp": 1000, "data": ["cake", 2.5]}])
    assert c.rows("Out") == [(2.5, 0.0, True, True, 2, 1, True, False, True, ["cake"], '{"cake":3.0}')]
    assert c.rows("J") == [({"b": 1}, {"k1": 1, "k2": "two"})]


def test_list_functions() -> None:
    plan = (
        "define stream S (a string, b string);"
        "from S select list:create(a, b, 'c') as l insert into L;"
        "from L select list:get(l, 1) as second, list:get(l, 9) as none, list:size(l) as n,"
        " list:contains(l, 'c') as has, list:isList(l) as isList, list:isEmpty(list:create()) as empty,"
        " list:add(list:clone(l), 'z', 0) as added, list:remove(list:clone(l), 'a') as removed insert into Out;"
    )
    c = run(plan, [{"stream": "S", "timestamp": 1000, "data": ["a", "b"]}])
    assert c.rows("Out") == [("b", None, 3, True, True, True, ["z", "a", "b", "c"], ["b", "c"])]


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("map:create('k')", "map:create() takes key and value pairs, got 1 arguments"),
        ("map:get(s, 'k')", "the first argument of map:get() must be object, found string"),
        ("list:size(i)", "the first argument of list:size() must be object, found int"),
    ],
)
def test_bad_map_and_list_calls_are_refused(expr: str, message: str) -> None:
    with pytest.raises(engine.QueryError, match=re.escape(message)):
        engine.compile(f"define stream S ({ATTRS}); from S select {expr} as x insert into Out;")


def test_map_of_a_non_map_fails_the_chunk() -> None:
    plan = "define stream S (o object); from S select map:size(o) as n insert into Out;"
    with pytest.raises(
        engine.ProcessingError, match=r"map:size\(\): the first argument must be a map, found str"
    ):
        run(plan, [{"stream": "S", "timestamp": 1000, "data": ["text"]}])


DOC = '{"name":"John","age":25,"married":true,"pay":2.5,"address":{"city":"Colombo"},"items":[{"id":1},{"id":2}]}'


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("json:getString(t, '$.name')", "John"),
        ("json:getString(t, 'name')", "John"),  # a path without $ reads as $.path
        ("json:getString(t, '$.address')", '{"city":"Colombo"}'),
        ("json:getString(t, '$.nope')", None),
        ("json:getInt(t, '$.age')", 25),
        ("json:getInt(t, '$.pay')", None),  # not an integer: null
        ("json:getLong(t, \"$['age']\")", 25),
        ("json:getDouble(t, '$.pay')", 2.5),
        ("json:getDouble(t, '$.age')", 25.0),
        ("json:getBool(t, '$.married')", True),
        ("json:getObject(t, '$.address')", {"city": "Colombo"}),
        ("json:getInt(t, '$.items[1].id')", 2),
        ("json:getObject(t, '$.items[*].id')", [1, 2]),
        ("json:isExists(t, '$.salary')", False),
        ("json:isExists(t, '$.address.city')", True),
        ("json:getObject(json:setElement(t, '$', 0f, 'salary'), '$.salary')", 0.0),
        ("json:getString(json:setElement(t, '$.address.city', 'Kandy'), '$.address.city')", "Kandy"),
        ("json:getObject(json:setElement(t, '$.items', '{\"id\":3}'), '$.items[2]')", {"id": 3}),
        ('json:toString(json:toObject(\'{"a": [1, 2.5, "x"]}\'))', '{"a":[1,2.5,"x"]}'),
        ("json:getInt(json:toObject(t), 'age')", 25),
    ],
)
def test_json_functions(expr: str, value: Any) -> None:
    assert select(expr, (1, 0, 0.0, 0.0, None, DOC)) == value


def test_json_path_beyond_the_subset_is_refused() -> None:
    with pytest.raises(engine.QueryError, match=r"JSON path '\$\.items\[\?\(@\.id > 1\)\]' is not supported"):
        engine.compile(
            f"define stream S ({ATTRS}); from S select json:getObject(t, '$.items[?(@.id > 1)]') as x insert into Out;"
        )


def test_invalid_json_fails_the_chunk() -> None:
    plan = f"define stream S ({ATTRS}); from S select json:getString(t, '$.a') as x insert into Out;"
    with pytest.raises(engine.ProcessingError, match="The input JSON is not a valid JSON"):
        run(plan, [{"stream": "S", "timestamp": 1000, "data": [1, 0, 0.0, 0.0, "", "{bad"]}])
