"""Siddhi's own pattern tests (siddhi-io/siddhi `query/pattern/*TestCase.java`), replayed
through `cepheus run` as conformance cases: each expects what the Java test asserts."""

from __future__ import annotations

import random
from typing import Any

import pytest

import engine
from engine.plan import patterns
from tests.support.conformance import check_case, check_invalid
from tests.support.replaying import assert_restore_equivalent, run

STOCKS = (
    "define stream Stream1 (symbol string, price float, volume int);\n"
    "define stream Stream2 (symbol string, price float, volume int);\n"
    "define stream Stream3 (symbol string, price float, volume int);\n"
)
LOGINS = (
    "define stream LoginFailure (id string, user string, type string);\n"
    "define stream LoginSuccess (id string, user string, type string);\n"
)


def ev(stream: str, t: int, *data: Any) -> dict[str, Any]:
    return {"stream": stream, "timestamp": t, "data": list(data)}


def case(plan: str, events: list[dict[str, Any]], out: str, rows: list[list[Any]]) -> dict[str, Any]:
    return {"plan": plan, "events": events, "expect": {out: {"current": rows, "current_count": len(rows)}}}


def assert_case(c: dict[str, Any]) -> None:
    problem = check_case(c)
    assert problem is None, problem


def test_a_reused_reference_names_its_first_state_in_the_select() -> None:
    """EveryPatternTestCase.testQuery9: `every e1=S[..] -> e1=S[..]`; `e1` in the select is
    the first state (Siddhi resolves a reference to the first state that carries it)."""
    plan = (
        STOCKS + "from every e1=Stream1[symbol == 'MSFT'] -> e1=Stream1[symbol == 'WSO2'] "
        "select e1.price as price1 insert into OutputStream;"
    )
    events = [
        ev("Stream1", 1000, "MSFT", 55.6, 100),
        ev("Stream1", 1100, "MSFT", 77.6, 100),
        ev("Stream1", 1200, "WSO2", 57.6, 100),
    ]
    assert_case(case(plan, events, "OutputStream", [[55.6], [77.6]]))


def test_a_reused_reference_in_a_later_filter_reads_the_first_state() -> None:
    plan = (
        STOCKS + "from every e1=Stream1[symbol == 'MSFT'] -> e1=Stream1[symbol == 'WSO2' and e1.price < 60] "
        "select e1.price as price1 insert into OutputStream;"
    )
    events = [
        ev("Stream1", 1000, "MSFT", 55.6, 100),
        ev("Stream1", 1100, "MSFT", 77.6, 100),
        ev("Stream1", 1200, "WSO2", 57.6, 100),
    ]
    assert_case(case(plan, events, "OutputStream", [[55.6]]))


@pytest.mark.parametrize("partitioned", [False, True], ids=["plain", "partitioned"])
def test_a_reused_reference_gives_the_same_on_the_fast_path(
    partitioned: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    query = (
        "from every e1=A[v > 10] -> e1=B[v < e1.v] within 30 milliseconds select e1.v as a insert into Out;"
    )
    if partitioned:
        query = f"partition with (k of A, k of B) begin {query} end;"
    rng = random.Random(7)
    items, t = [], 1000
    for _ in range(300):
        t += rng.choice([0, 1, 3, 10, 40])
        items.append(ev(rng.choice("AB"), t, rng.randrange(3), rng.randrange(30)))
    results = []
    for flag in (True, False):
        monkeypatch.setattr(patterns, "FAST_PATHS", flag)
        results.append(
            run("define stream A (k int, v int); define stream B (k int, v int);\n" + query, items).records
        )
    assert results[0] == results[1] and results[0]


def test_within_follows_a_parenthesised_pattern() -> None:
    """WithinPatternTestCase.testQuery2."""
    plan = (
        STOCKS + "from (every e1=Stream1[price>20]-> e2=Stream2[price>e1.price]) within 1 sec "
        "select e1.symbol as symbol1, e2.symbol as symbol2 insert into OutputStream;"
    )
    events = [
        ev("Stream1", 1000, "WSO2", 55.6, 100),
        ev("Stream1", 2500, "GOOG", 54.0, 100),
        ev("Stream2", 3000, "IBM", 55.7, 100),
    ]
    assert_case(case(plan, events, "OutputStream", [["GOOG", "IBM"]]))


def test_within_follows_nested_groups() -> None:
    """WithinPatternTestCase.testQuery3."""
    plan = (
        STOCKS + "from (every (e1=Stream1[price>20] -> e3=Stream1[price>20]) -> e2=Stream2[price>e1.price]) "
        "within 2 sec select e1.price as price1, e3.price as price3, e2.price as price2 "
        "insert into OutputStream;"
    )
    events = [
        ev("Stream1", 1000, "WSO2", 55.6, 100),
        ev("Stream1", 1600, "GOOG", 54.0, 100),
        ev("Stream1", 2200, "WSO2", 53.6, 100),
        ev("Stream1", 3100, "GOOG", 53.0, 100),
        ev("Stream2", 3700, "IBM", 57.7, 100),
    ]
    assert_case(case(plan, events, "OutputStream", [[53.6, 53.0, 57.7]]))


def test_a_sequence_may_open_with_a_group() -> None:
    """LogicalAbsentSequenceTestCase.testQueryAbsent50: `every (not A for T and not B for T), e3=C`."""
    plan = (
        STOCKS + "from every (not Stream1[price>10] for 1 sec and not Stream2[price>20] for 1 sec), "
        "e3=Stream3[price>30] select e3.symbol as symbol insert into OutputStream;"
    )
    events = [{"time": 3101}, ev("Stream3", 3101, "WSO2", 35.0, 100), {"time": 3602}]
    assert_case(case(plan, events, "OutputStream", [["WSO2"]]))


def test_one_event_completes_every_partial_match_of_a_logical_state() -> None:
    """LogicalPatternTestCase.testQuery11: the Stream3 event completes both e1 matches."""
    plan = (
        STOCKS + "from every e1=Stream1[price >20] -> e2=Stream2['IBM' == symbol] and "
        "e3=Stream3['WSO2' == symbol] select e1.price as price1, e2.price as price2, e3.price as price3 "
        "insert into OutputStream;"
    )
    events = [
        ev("Stream1", 1000, "IBM", 25.5, 100),
        ev("Stream1", 1100, "IBM", 59.65, 100),
        ev("Stream2", 1200, "IBM", 45.5, 100),
        ev("Stream3", 1300, "WSO2", 46.56, 100),
    ]
    rows = [[25.5, 45.5, 46.56], [59.65, 45.5, 46.56]]
    assert_case(case(plan, events, "OutputStream", rows))


def test_having_reads_counted_events_by_index() -> None:
    """CountPatternTestCase.testQuery14: `having` on `e1[1]`, `e1[2]` of a `<0:5>` count."""
    plan = (
        STOCKS + "from e1=Stream1[price>20] <0:5> -> e2=Stream2[price>e1[0].price] "
        "select e1[0].price as price1_0, e1[1].price as price1_1, e1[2].price as price1_2, e2.price as price2 "
        "having instanceOfFloat(e1[1].price) and not instanceOfFloat(e1[2].price) and "
        "instanceOfFloat(price1_1) and not instanceOfFloat(price1_2) insert into OutputStream;"
    )
    events = [
        ev("Stream1", 1000, "WSO2", 25.6, 100),
        ev("Stream1", 1100, "WSO2", 23.6, 100),
        ev("Stream1", 1200, "GOOG", 7.6, 100),
        ev("Stream2", 1300, "IBM", 45.7, 100),
    ]
    assert_case(case(plan, events, "OutputStream", [[25.6, 23.6, None, 45.7]]))


def test_having_reads_the_input_and_the_event_time() -> None:
    plan = (
        STOCKS + "from e1=Stream1 -> e2=Stream2 select e1.symbol as s "
        "having e2.volume > 5 and eventTimestamp() > 1100 insert into OutputStream;"
    )
    events = [ev("Stream1", 1000, "A", 1.0, 1), ev("Stream2", 1200, "B", 2.0, 9)]
    assert_case(case(plan, events, "OutputStream", [["A"]]))


def test_an_absent_partner_seen_blocks_its_logical_and() -> None:
    """CountPatternTestCase.testQuery15: a Stream1 event after e2's two events kills the
    match at `not Stream1 and e3=Stream2`; only the last complete e2 pair reaches e3."""
    plan = (
        STOCKS + "from every e1=Stream1[price>20] -> e2=Stream1[price>20]<2> -> "
        "not Stream1[price>20] and e3=Stream2 "
        "select e1.price as price1_0, e2[0].price as price2_0, e2[1].price as price2_1, "
        "e2[2].price as price2_2, e3.price as price3_0 insert into OutputStream;"
    )
    events = [
        ev("Stream1", 1000, "WSO2", 25.6, 100),
        ev("Stream1", 1100, "WSO2", 23.6, 100),
        ev("Stream1", 1200, "WSO2", 23.6, 100),
        ev("Stream1", 1300, "GOOG", 27.6, 100),
        ev("Stream1", 1400, "GOOG", 28.6, 100),
        ev("Stream2", 1500, "IBM", 45.7, 100),
    ]
    assert_case(case(plan, events, "OutputStream", [[23.6, 27.6, 28.6, None, 45.7]]))


def test_every_absent_partner_seen_restarts_the_logical_and() -> None:
    """EveryAbsentPatternTestCase.testQueryAbsent49: Stream1 blocks IBM and re-arms the pair;
    ORACLE then completes it."""
    plan = (
        STOCKS + "from every (not Stream1[price>10] and e2=Stream2[price>20]) -> e3=Stream3[price>30] "
        "select e2.symbol as symbol2, e3.symbol as symbol3 insert into OutputStream;"
    )
    events = [
        ev("Stream1", 1000, "WSO2", 15.0, 100),
        ev("Stream2", 1101, "IBM", 25.0, 100),
        ev("Stream2", 1202, "ORACLE", 35.0, 100),
        ev("Stream3", 1303, "GOOGLE", 45.0, 100),
    ]
    assert_case(case(plan, events, "OutputStream", [["ORACLE", "GOOGLE"]]))


@pytest.mark.parametrize(
    ("pattern", "select", "timeline", "rows"),
    [
        pytest.param(  # testQueryAbsent18: the absent side completes once, no duplicate
            "not Stream1[price>10] for 1 sec or e2=Stream2[price>20] -> e3=Stream3[price>30]",
            "e2.symbol as symbol2, e3.symbol as symbol3",
            [(2101, "GOOGLE", 35.0)],
            [[None, "GOOGLE"]],
            id="absent-or-present",
        ),
        pytest.param(  # testQueryAbsent33: two absent sides complete the 'or' once
            "(not Stream1[price>10] for 1 sec or not Stream2[price>20] for 1 sec) -> e3=Stream3[price>30]",
            "e3.symbol as symbol",
            [(2101, "WSO2", 35.0), (3202, "WSO2", 35.0)],
            [["WSO2"]],
            id="absent-or-absent",
        ),
        pytest.param(  # testQueryAbsent47: with every, each side's timer completes one
            "every (not Stream1[price>10] for 2 sec or not Stream2[price>20] for 2 sec) -> e3=Stream3[price>30]",
            "e3.symbol as symbol",
            [(3101, "WSO2", 35.0), (5202, "IBM", 55.0)],
            [["WSO2"], ["WSO2"], ["IBM"], ["IBM"]],
            id="every-absent-or-absent",
        ),
        pytest.param(  # testQueryAbsent54
            "every (not Stream1[price>10] for 1 sec or e2=Stream2[price>20]) -> e3=Stream3[price>30]",
            "e2.symbol as symbol2, e3.symbol as symbol3",
            [(3101, "WSO2", 35.0)],
            [[None, "WSO2"], [None, "WSO2"]],
            id="every-absent-or-present",
        ),
    ],
)
def test_a_logical_state_with_absent_sides_completes_as_siddhi_counts(
    pattern: str, select: str, timeline: list[tuple[int, str, float]], rows: list[list[Any]]
) -> None:
    """LogicalAbsentPatternTestCase: the pair starts with one shared partial; `every`
    re-arms both sides; a side that completes a start 'or' stops its absent partner."""
    plan = STOCKS + f"from {pattern} select {select} insert into OutputStream;"
    events: list[dict[str, Any]] = []
    for t, symbol, price in timeline:
        events += [{"time": t}, ev("Stream3", t, symbol, price, 100)]
    events.append({"time": timeline[-1][0] + 1001})
    assert_case(case(plan, events, "OutputStream", rows))


@pytest.mark.parametrize("sep", ["->", ","], ids=["pattern", "sequence"])
@pytest.mark.parametrize(
    ("later", "rows"),
    [([], [["WSO2"]]), ([ev("Stream2", 1101, "IBM", 25.0, 101)], [])],
    ids=["nothing-arrives", "stream2-arrives"],
)
def test_two_absent_sides_after_a_state_both_wait(
    sep: str, later: list[dict[str, Any]], rows: list[list[Any]]
) -> None:
    """Logical/LogicalAbsentSequence testQueryAbsent25-26: `e1 -> (not A for T and not B for T)`
    completes when both waits pass; an A inside the wait kills the match."""
    plan = (
        STOCKS + f"from e1=Stream1[price>10] {sep} (not Stream2[price>20] for 1 sec and "
        "not Stream3[price>30] for 1 sec) within 2 sec select e1.symbol as symbol1 insert into OutputStream;"
    )
    events = [ev("Stream1", 1000, "WSO2", 15.0, 100), *later, {"time": 7000}]
    assert_case(case(plan, events, "OutputStream", rows))


def test_every_absent_or_absent_sequence_waits_again_after_an_arrival() -> None:
    """LogicalAbsentSequenceTestCase.testQueryAbsent46: an arrival restarts its side's wait."""
    plan = (
        STOCKS + "from every (not Stream1[price>10] for 1 sec or not Stream2[price>20] for 1 sec), "
        "e3=Stream3[price>30] select e3.symbol as symbol insert into OutputStream;"
    )
    events = [
        {"time": 1501},
        ev("Stream1", 1501, "ORACLE", 15.0, 100),
        {"time": 2102},
        ev("Stream3", 2102, "WSO2", 35.0, 100),
        {"time": 2403},
        ev("Stream2", 2403, "MICROSOFT", 45.0, 100),
        {"time": 3204},
        ev("Stream3", 3204, "IBM", 55.0, 100),
        {"time": 4000},
    ]
    assert_case(case(plan, events, "OutputStream", [["WSO2"], ["IBM"]]))


def _login_events() -> list[dict[str, Any]]:
    """CountPatternTestCase.testQuery25's timeline: hans fails 6 times, werner 8 times and
    succeeds, 3 s pass, hans fails 6 times and succeeds."""
    out: list[dict[str, Any]] = []
    t = 1000

    def send(stream: str, id_: str, user: str, kind: str) -> None:
        nonlocal t
        t += 1
        out.append(ev(stream, t, id_, user, kind))

    for i in range(1, 7):
        send("LoginFailure", f"id_{i}", "hans", "failure")
    for i in range(8, 16):
        send("LoginFailure", f"id_{i}", "werner", "failure")
    send("LoginSuccess", "id_16", "werner", "success")
    t += 3000
    for i in range(17, 23):
        send("LoginFailure", f"id_{i}", "hans", "failure")
    send("LoginSuccess", "id_23", "hans", "success")
    return out


@pytest.mark.parametrize(
    "purge",
    ["", "@purge(enable='true', interval='10 sec', idle.period='10 sec')\n"],
    ids=["kept", "purge-enabled"],
)
def test_an_expired_count_match_restarts_its_every_once(purge: str) -> None:
    """CountPatternTestCase.testQuery25: the hans match that `within` expires waits at the
    count and at the state after it; it re-arms `every` once, not once per state."""
    plan = (
        LOGINS + purge + "partition with (user of LoginFailure, user of LoginSuccess)\nbegin\n"
        "  from every (e1=LoginFailure<3:> -> e2=LoginSuccess) within 2 sec\n"
        "  select e1[0].id as id, e2.user as user\n  insert into BreakIn\nend;"
    )
    rows = [["id_8", "werner"], ["id_17", "hans"]]
    assert_case(case(plan, _login_events(), "BreakIn", rows))


def test_an_expired_count_match_restarts_its_every_once_outside_a_partition() -> None:
    plan = (
        LOGINS + "from every (e1=LoginFailure<3:> -> e2=LoginSuccess) within 2 sec "
        "select e1[0].id as id, e2.user as user insert into BreakIn;"
    )
    events = [e for e in _login_events() if e["data"][1] == "hans"]
    assert_case(case(plan, events, "BreakIn", [["id_17", "hans"]]))


@pytest.mark.parametrize(
    "pattern",
    ["e1=Stream1 -> e2=Stream2 and e3=Stream3<1:>", "e1=Stream1 -> e2=Stream2<2> or e3=Stream3"],
)
def test_a_counting_state_in_a_logical_state_is_rejected_with_its_position(pattern: str) -> None:
    """Siddhi's grammar joins two plain (or absent) states with 'and'/'or', never a count."""
    plan = STOCKS + f"from {pattern} select e1.price as p insert into OutputStream;"
    with pytest.raises(engine.QuerySyntaxError, match="counting state cannot be a side"):
        engine.compile(plan)
    assert check_invalid({"plan": plan}) is None


def test_an_unforeseen_planner_failure_is_a_query_error_at_the_pattern(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(self: Any) -> None:
        raise KeyError(3)

    monkeypatch.setattr(patterns._Planner, "compile_filters", broken)
    plan = STOCKS + "from every e1=Stream1 -> e2=Stream2 select e1.price as p insert into OutputStream;"
    with pytest.raises(engine.QueryValidationError) as err:
        engine.compile(plan)
    assert (err.value.line, err.value.col) == (4, 6)
    assert "cannot plan this pattern (KeyError: 3)" in str(err.value)


@pytest.mark.parametrize(
    "query",
    [
        "from every e1=Stream1[price >20] -> e2=Stream2['IBM' == symbol] and e3=Stream3['WSO2' == symbol] "
        "select e1.price as p1, e3.price as p3 insert into OutputStream;",
        "from every (not Stream1[price>10] for 2 sec or not Stream2[price>20] for 2 sec) -> e3=Stream3[price>30] "
        "select e3.symbol as s insert into OutputStream;",
        "from every e1=Stream1[price>20] -> e2=Stream1[price>20]<2> -> not Stream1[price>20] and e3=Stream2 "
        "select e1.price as a, e3.price as c insert into OutputStream;",
    ],
    ids=["logical-and", "absent-or-absent", "count-then-absent-and"],
)
def test_logical_matches_survive_a_snapshot_at_any_point(query: str) -> None:
    items = [
        ev("Stream1", 1000, "IBM", 25.5, 100),
        ev("Stream1", 1100, "IBM", 59.65, 100),
        ev("Stream2", 1200, "IBM", 45.5, 100),
        {"time": 2500},
        ev("Stream3", 3101, "WSO2", 46.56, 100),
        ev("Stream1", 3200, "IBM", 30.0, 100),
        ev("Stream2", 3300, "IBM", 45.5, 100),
        {"time": 5202},
        ev("Stream3", 5202, "WSO2", 46.56, 100),
    ]
    assert_restore_equivalent(STOCKS + query, items)
