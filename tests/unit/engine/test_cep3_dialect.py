"""WSO2 CEP 3.x (Siddhi 2.x/3.x) forms still accepted in a 3.x plan: unqualified names in
a stream-table join's `on` condition, and `within <milliseconds>` in patterns."""

from __future__ import annotations

import pytest

import engine
from tests.support.replaying import run

JOIN = """
define stream S (sym string, price double);
define stream Stock (sym string, qty int);
define table T (sym string, qty int);
from Stock insert into T;
from S join T on sym == T.sym select S.sym as sym, T.qty as qty insert into Out;
"""


def test_cep3_join_on_resolves_unqualified_names_against_the_stream() -> None:
    c = run(
        "@Plan:name('p')\n" + JOIN,
        [
            {"stream": "Stock", "timestamp": 1000, "data": ["IBM", 10]},
            {"stream": "Stock", "timestamp": 1000, "data": ["WSO2", 20]},
            {"stream": "S", "timestamp": 1001, "data": ["WSO2", 55.5]},
        ],
    )
    assert c.rows("Out") == [("WSO2", 20)]


def test_cep3_join_on_resolves_against_the_stream_when_the_table_is_on_the_left() -> None:
    plan = "@Plan:name('p')\n" + JOIN.replace(
        "from S join T on sym == T.sym", "from T join S on sym == T.sym"
    )
    c = run(
        plan,
        [
            {"stream": "Stock", "timestamp": 1000, "data": ["IBM", 10]},
            {"stream": "S", "timestamp": 1001, "data": ["IBM", 1.0]},
        ],
    )
    assert c.rows("Out") == [("IBM", 10)]


def test_siddhi4_plan_still_refuses_the_ambiguous_name() -> None:
    with pytest.raises(engine.QueryError) as err:
        engine.compile(JOIN)
    assert "ambiguous" in str(err.value)
    assert (err.value.line, err.value.col) == (6, 18)


PATTERN = """
define stream A (v int); define stream B (v int);
from every e1=A -> e2=B[v > e1.v] within {within}
select e1.v as a, e2.v as b insert into Out;
"""


@pytest.mark.parametrize("within", ["10000", "10000L", "10 sec"])
def test_pattern_within_takes_a_bare_number_of_milliseconds(within: str) -> None:
    c = run(
        PATTERN.format(within=within),
        [
            {"stream": "A", "timestamp": 1000, "data": [1]},
            {"stream": "B", "timestamp": 5000, "data": [2]},
            {"stream": "A", "timestamp": 6000, "data": [3]},
            {"stream": "B", "timestamp": 16001, "data": [4]},
        ],
    )
    assert c.rows("Out") == [(1, 2)]


def test_bare_number_within_marks_the_plan_as_cep3() -> None:
    app = engine.parse(PATTERN.format(within="10000"))
    assert app.legacy
    assert not engine.parse(PATTERN.format(within="10 sec")).legacy


LENIENT = """
@Plan:name('p')
define stream S (user string, ts long);
define table T (user string);
from S[not((user == T.user) in T)]
select e3[last].ts as at, T.user as who, Nope.ts as t2
insert into Out;
"""


def test_cep4_single_stream_query_reads_an_unknown_qualifier_by_attribute_name() -> None:
    """Siddhi 3.x (CEP 4) and Siddhi 4 before 4.3.19 read `X.attr` in a one-stream query by the
    attribute's name when X names nothing in scope (WSO2's IS and API Manager analytics wrote
    `e3[last].timestamp` and `Table.col` so); a CEP 4 plan keeps that."""
    c = run(LENIENT, [{"stream": "S", "timestamp": 1000, "data": ["ann", 7]}])
    assert c.rows("Out") == [(7, "ann", 7)]


def test_siddhi4_plan_still_refuses_an_unknown_qualifier() -> None:
    with pytest.raises(engine.QueryError, match="unknown stream or reference 'e3'"):
        engine.compile(LENIENT.replace("@Plan:name('p')", "@App:name('p')"))


def test_siddhi3_core_unique_external_time_batch_is_the_unique_extensions_window() -> None:
    """`#window.uniqueExternalTimeBatch(...)` (Siddhi 3.x core) runs as
    `#window.unique:externalTimeBatch(...)`, the extension that ported it."""
    items = [
        {"stream": "S", "timestamp": 1000, "data": [k, ts]}
        for k, ts in (("a", 1000), ("b", 1200), ("a", 1500), ("c", 2100), ("a", 2500), ("d", 3200))
    ]
    outs = []
    for window in ("uniqueExternalTimeBatch", "unique:externalTimeBatch"):
        plan = (
            "@Plan:name('p') define stream S (k string, ts long);"
            f"from S#window.{window}(k, ts, 1 sec, 0, 0, true) select k, ts, count() as n insert into Out;"
        )
        outs.append(run(plan, items).rows("Out"))
    # a batch keeps the latest event per key in first-seen key order; the timestamps become the
    # batch end (the last parameter); count() over the batch of unique keys
    assert outs[0] == outs[1] == [("b", 2000, 2), ("a", 3000, 2)]
