"""The SiddhiQL front end: syntax trees, spans, annotations, legacy forms, syntax errors."""

from __future__ import annotations

import pytest

import engine
from engine.query.definitions import StreamDefinition, TableDefinition, TriggerDefinition, WindowDefinition
from engine.query.expressions import BinaryOp, Constant, FunctionCall, IsNull, Not, Variable
from engine.query.queries import (
    AbsentState,
    CountState,
    EveryState,
    InsertInto,
    JoinInput,
    LogicalState,
    NextState,
    Partition,
    RangePartition,
    SingleInput,
    StateInput,
    StreamState,
    UpdateOrInsert,
    ValuePartition,
)
from engine.types import AttrType


def test_stream_definition_keeps_attributes_and_annotations() -> None:
    app = engine.parse(
        "@Import('S:1.0.0') define stream S (a int, b long, c float, d double, e string, f bool, g object);"
    )
    (d,) = app.definitions
    assert isinstance(d, StreamDefinition)
    assert d.attribute_types == [
        AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.DOUBLE, AttrType.STRING, AttrType.BOOL, AttrType.OBJECT,
    ]  # fmt: skip
    assert d.annotations[0].name == "Import" and d.annotations[0].values == ["S:1.0.0"]


def test_app_annotations_belong_to_the_app() -> None:
    app = engine.parse("@App:name('shop') @App:description('x') define stream S (a int);")
    assert app.name == "shop"
    assert [a.name for a in app.annotations] == ["App:name", "App:description"]
    assert app.definitions[0].annotations == []


def test_plan_name_of_cep3_plans_marks_the_legacy_dialect() -> None:
    app = engine.parse("@Plan:name('p') define stream S (a int); from S insert into T;")
    assert app.name == "p" and app.legacy


def test_filter_expression_tree_and_spans() -> None:
    app = engine.parse(
        "define stream S (price double, sym string);\nfrom S[price > 10 and not (sym == 'x')] select * insert into T;"
    )
    q = app.elements[0]
    assert isinstance(q.input, SingleInput)
    cond = q.input.handlers[0].expr
    assert isinstance(cond, BinaryOp) and cond.op == "and"
    assert isinstance(cond.left, BinaryOp) and cond.left.op == ">"
    assert isinstance(cond.left.left, Variable) and cond.left.left.attribute == "price"
    assert (
        isinstance(cond.left.right, Constant)
        and cond.left.right.value == 10
        and cond.left.right.type is AttrType.INT
    )
    assert isinstance(cond.right, Not)
    assert (cond.left.left.span.line, cond.left.left.span.col) == (2, 8)


def test_not_binds_to_the_next_operand_as_in_siddhi() -> None:
    q = engine.parse("define stream S (a bool, b int); from S[not a == true] insert into T;").elements[0]
    cond = q.input.handlers[0].expr
    assert isinstance(cond, BinaryOp) and isinstance(cond.left, Not)


@pytest.mark.parametrize(
    ("text", "value", "kind"),
    [("5", 5, AttrType.INT), ("5L", 5, AttrType.LONG), ("5.5f", 5.5, AttrType.FLOAT), ("5.5", 5.5, AttrType.DOUBLE),
     ("2d", 2.0, AttrType.DOUBLE), ("'s'", "s", AttrType.STRING), ("true", True, AttrType.BOOL),
     ("1 min 30 sec", 90_000, AttrType.LONG), ("-3", -3, AttrType.INT)],
)  # fmt: skip
def test_literals_have_siddhi_types(text: str, value: object, kind: AttrType) -> None:
    q = engine.parse(f"define stream S (a int); from S select {text} as x insert into T;").elements[0]
    c = q.selector.attributes[0].expr
    assert isinstance(c, Constant) and c.value == value and c.type is kind


def test_windows_joins_and_outputs() -> None:
    app = engine.parse(
        "define stream A (x int); define stream B (x int); define table T (x int);"
        "from A#window.time(1 sec) as a unidirectional left outer join B#window.length(5) as b on a.x == b.x "
        "select a.x insert all events into O;"
        "from A select x update or insert into T set T.x = x on T.x == x;"
    )
    join = app.elements[0]
    assert isinstance(join.input, JoinInput)
    assert join.input.join_type == "left_outer" and join.input.unidirectional == "left"
    assert join.input.left.window.call.name == "time" and join.input.left.alias == "a"
    assert isinstance(join.output, InsertInto) and join.output.event_type == "all"
    upsert = app.elements[1].output
    assert (
        isinstance(upsert, UpdateOrInsert) and upsert.target == "T" and upsert.set[0].variable.stream == "T"
    )


def test_patterns_with_every_counts_absent_and_logical_states() -> None:
    q = engine.parse(
        "define stream S (v int); define stream R (v int);"
        "from every e1=S -> e2=S[v > e1.v]<2:5> -> not R for 5 sec -> e3=S or e4=R within 1 min select e1.v insert into O;"
    ).elements[0]
    assert isinstance(q.input, StateInput) and q.input.kind == "pattern" and q.input.within_ms == 60_000
    root = q.input.root
    assert isinstance(root, NextState) and isinstance(root.then, LogicalState)
    first = root.first.first.first
    assert isinstance(first, EveryState) and isinstance(first.inner, StreamState) and first.inner.ref == "e1"
    count = root.first.first.then
    assert isinstance(count, CountState) and (count.min_count, count.max_count) == (2, 5)
    absent = root.first.then
    assert isinstance(absent, AbsentState) and absent.waiting_ms == 5000


def test_sequences_with_quantifiers() -> None:
    q = engine.parse(
        "define stream S (v int); from every e1=S, e2=S[v > e1.v]+, e3=S? select e1.v insert into O;"
    ).elements[0]
    assert q.input.kind == "sequence"
    plus = q.input.root.first.then
    assert isinstance(plus, CountState) and (plus.min_count, plus.max_count) == (1, None)


def test_indexed_event_references_and_is_null() -> None:
    q = engine.parse(
        "define stream S (v int); from e1=S<2:> -> e2=S select e1[last - 1].v as a, e1[0].v as b insert into O;"
    ).elements[0]
    a, b = (o.expr for o in q.selector.attributes)
    assert a.index.from_last == 1 and b.index.position == 0
    q2 = engine.parse(
        "define stream S (v int); from e1=S -> e2=S[e1 is null] select e2.v insert into O;"
    ).elements[0]
    cond = q2.input.root.then.input.handlers[0].expr
    assert isinstance(cond, IsNull)


def test_partitions_value_and_range() -> None:
    app = engine.parse(
        "define stream S (sym string, price double);"
        "partition with (price >= 100 as 'big' or price < 100 as 'small' of S, sym of S) begin "
        "from S select sym insert into #I; from #I select sym insert into O; end;"
    )
    p = app.elements[0]
    assert isinstance(p, Partition)
    assert isinstance(p.partition_with[0], RangePartition) and [
        lbl for _, lbl in p.partition_with[0].ranges
    ] == ["big", "small"]
    assert isinstance(p.partition_with[1], ValuePartition)
    assert p.queries[0].output.inner and p.queries[1].input.inner


def test_tables_windows_triggers_definitions() -> None:
    app = engine.parse(
        "@PrimaryKey('id') define table T (id int, v double);"
        "define window W (v double) length(10) output expired events;"
        "define trigger Every5 at every 5 sec; define trigger Cron at '*/5 * * * * ?'; define trigger Boot at 'start';"
    )
    t, w, e5, cron, boot = app.definitions
    assert isinstance(t, TableDefinition) and t.annotations[0].values == ["id"]
    assert isinstance(w, WindowDefinition) and w.window.name == "length" and w.output_event_type == "expired"
    assert isinstance(e5, TriggerDefinition) and e5.every_ms == 5000
    assert cron.at == "*/5 * * * * ?" and boot.at == "start"


def test_siddhi2_forms_of_cep3_plans() -> None:
    app = engine.parse(
        "define stream S (sym string, v int);"
        "define partition P by S.sym;"
        "from S#window.time(30 seconds) insert into X for expired-events;"
        "from S select sym, sum(v) as t insert into Y partition by P;"
    )
    assert app.legacy
    x = app.elements[0]
    assert x.output.event_type == "expired"
    assert isinstance(app.elements[1], Partition) and app.elements[1].partition_with[0].stream == "S"


def test_comments_are_ignored() -> None:
    app = engine.parse(
        "-- a stream\ndefine stream S (a int); /* a query\n over lines */ from S insert into T;"
    )
    assert len(app.definitions) == 1 and len(app.elements) == 1


def test_functions_with_namespaces() -> None:
    q = engine.parse(
        "define stream S (a string); from S select str:concat(a, 'x') as c insert into T;"
    ).elements[0]
    call = q.selector.attributes[0].expr
    assert isinstance(call, FunctionCall) and call.namespace == "str" and call.name == "concat"


@pytest.mark.parametrize(
    ("plan", "line", "col", "words"),
    [
        ("define stream S (a int);\nfrom S[a > 1 select a insert into T;", 2, 14, "expected ']'"),
        ("define stream S (a int);\nfrom S select a + 1 insert into T;", 2, 15, "needs a name"),
        ("define stream S (a nope);", 1, 20, "unknown type 'nope'"),
        ("define stream S (a int); from S select a insert T;", 1, 49, "expected 'into'"),
        (
            "define stream S (a int); from S#window.length(2) as a outer join S as b select * insert into T;",
            1,
            55,
            "outer join",
        ),
    ],
)
def test_syntax_errors_point_at_the_mistake(plan: str, line: int, col: int, words: str) -> None:
    with pytest.raises(engine.QuerySyntaxError) as info:
        engine.parse(plan)
    err = info.value
    assert (err.line, err.col) == (line, col)
    assert words in str(err)


def test_published_temperature_plan_is_rejected_at_the_missing_bracket() -> None:
    from pathlib import Path

    text = (
        Path(__file__).resolve().parents[3] / "samples" / "temperature" / "plan-as-published.siddhi"
    ).read_text()
    with pytest.raises(engine.QueryError) as info:
        engine.compile(text)
    assert (info.value.line, info.value.col) == (5, 65)
    assert "expected ']' to close the filter opened at 5:17" in info.value.format()
