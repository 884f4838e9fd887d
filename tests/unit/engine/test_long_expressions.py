"""Long operator chains compile flat; absurd nesting is refused with its position."""

from __future__ import annotations

from typing import Any

import pytest

import engine
from engine.compiler.parse_expressions import MAX_NESTING
from engine.types import f32
from tests.support.replaying import run

ATTRS = "a int, d double, f float"


def outputs(condition: str, select: str, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    plan = f"define stream S ({ATTRS});\nfrom S[{condition}] select {select} insert into Out;\n"
    items = [{"stream": "S", "timestamp": 1000 + i, "data": list(row)} for i, row in enumerate(rows)]
    return run(plan, items).rows("Out")


def syntax_error(expression: str) -> engine.QueryError:
    plan = f"define stream S ({ATTRS});\nfrom S[{expression}] select a insert into Out;\n"
    with pytest.raises(engine.QueryError) as info:
        engine.validate(plan)
    return info.value


def test_thousand_term_or_chain_works_as_an_in_list() -> None:
    whitelist = " or ".join(f"a == {i * 3}" for i in range(1000))
    rows = [(0, 0.0, 0.0), (4, 0.0, 0.0), (2997, 0.0, 0.0), (3000, 0.0, 0.0), (None, 0.0, 0.0)]
    assert outputs(whitelist, "a", rows) == [(0,), (2997,)]


def test_thousand_term_and_chain_works() -> None:
    blacklist = " and ".join(f"a != {i}" for i in range(1000))
    rows = [(5, 0.0, 0.0), (1000, 0.0, 0.0), (None, 0.0, 0.0)]
    assert outputs(blacklist, "a", rows) == [(1000,)]


def test_thousand_term_plus_chain_sums_and_stays_null_with_a_null() -> None:
    total = " + ".join(["a"] * 1000)
    rows = [(3, 0.0, 0.0), (None, 0.0, 0.0)]
    assert outputs("true", f"{total} as x", rows) == [(3000,), (None,)]


def test_long_mixed_chain_keeps_java_division_and_left_to_right_order() -> None:
    chain = "a" + " - 1 + a / 2 * 3 % 7" * 300
    expected = 9
    for _ in range(300):
        expected = expected - 1 + int(9 / 2) * 3 % 7
    assert outputs("true", f"{chain} as x", [(9, 0.0, 0.0)]) == [(expected,)]


def test_long_float_chain_rounds_every_step_to_float() -> None:
    chain = " + ".join(["f"] * 500)
    expected = 0.1
    for _ in range(499):
        expected = f32(expected + 0.1)
    assert outputs("true", f"{chain} as x", [(0, 0.0, 0.1)]) == [(f32(expected),)]


def test_long_chain_with_a_division_by_zero_gives_null() -> None:
    chain = "d" + " / 2.0" * 100 + " + a / 0" + " * 2.0" * 100
    assert outputs("true", f"{chain} as x", [(1, 8.0, 0.0)]) == [(None,)]


def test_hundred_nested_parentheses_work() -> None:
    condition = "(" * 100 + "a > 1" + ")" * 100
    assert outputs(condition, "a", [(1, 0.0, 0.0), (2, 0.0, 0.0)]) == [(2,)]


def test_hundred_nested_nots_and_negations_work() -> None:
    condition = "not " * 98 + "(a > 1)"
    value = "- " * 99 + "a"
    assert outputs(condition, f"{value} as x", [(1, 0.0, 0.0), (2, 0.0, 0.0)]) == [(-2,)]


def test_ten_thousand_nested_parentheses_report_the_limit_at_the_opening() -> None:
    error = syntax_error("(" * 10_000 + "a > 1" + ")" * 10_000)
    assert isinstance(error, engine.QuerySyntaxError)
    assert (error.line, error.col) == (2, len("from S[") + MAX_NESTING + 1)
    assert f"more than {MAX_NESTING} levels" in str(error)


@pytest.mark.parametrize(
    "expression",
    [
        "not " * 10_000 + "true",
        "coalesce(" * 10_000 + "a" + ")" * 10_000 + " > 1",
        "- " * 10_000 + "a > 1",
    ],
    ids=["not", "calls", "negation"],
)
def test_deep_nesting_of_any_kind_reports_the_limit(expression: str) -> None:
    error = syntax_error(expression)
    assert error.line == 2 and f"more than {MAX_NESTING} levels" in str(error)


def test_a_chain_too_deep_for_python_is_a_query_error_at_the_expression() -> None:
    error = syntax_error("(a == 3)" + " == true" * 300)
    assert (error.line, error.col) == (2, len("from S[") + 1)
    assert "too deeply nested" in str(error)


def test_only_in_and_or_continue_after_in_as_in_siddhi() -> None:
    plan = "define stream S (a int, b bool);\ndefine table T (a int);\nfrom S[a == 1 in T == b] select a insert into Out;\n"
    with pytest.raises(engine.QuerySyntaxError) as info:
        engine.parse(plan)
    assert (info.value.line, info.value.col) == (3, 20)
    parsed = engine.parse(plan.replace("a == 1 in T == b", "(a == 1 in T) == b"))
    assert parsed.elements
