"""Patterns and sequences: every, within, counting, logical states, absence."""

from __future__ import annotations

import random
import zlib

import pytest

import engine
from engine.plan import patterns
from tests.support.replaying import assert_restore_equivalent, run

DEFS = "define stream A (v int); define stream B (v int); define stream C (v int);\n"


def ev(stream: str, t: int, v: int) -> dict:
    return {"stream": stream, "timestamp": t, "data": [v]}


def test_without_every_a_pattern_matches_once() -> None:
    c = run(
        DEFS + "from e1=A -> e2=B select e1.v as a, e2.v as b insert into Out;",
        [ev("A", 1000, 1), ev("A", 1001, 2), ev("B", 1002, 3), ev("B", 1003, 4)],
    )
    assert c.rows("Out") == [(1, 3)]


def test_every_restarts_on_each_event_of_its_state() -> None:
    c = run(
        DEFS + "from every e1=A -> e2=B select e1.v as a, e2.v as b insert into Out;",
        [ev("A", 1000, 1), ev("A", 1001, 2), ev("B", 1002, 3), ev("B", 1003, 4)],
    )
    assert c.rows("Out") == [(1, 3), (2, 3)]


def test_every_over_a_group_does_not_overlap() -> None:
    items = [ev("A", 1000, 1), ev("A", 1001, 2), ev("B", 1002, 3), ev("A", 1003, 4), ev("B", 1004, 5)]
    c = run(DEFS + "from every (e1=A -> e2=B) select e1.v as a, e2.v as b insert into Out;", items)
    assert c.rows("Out") == [(1, 3), (4, 5)]


def test_conditions_refer_to_earlier_states() -> None:
    items = [ev("A", 1000, 10), ev("B", 1001, 5), ev("B", 1002, 15)]
    c = run(DEFS + "from every e1=A -> e2=B[v > e1.v] select e1.v as a, e2.v as b insert into Out;", items)
    assert c.rows("Out") == [(10, 15)]


@pytest.fixture(params=[True, False], ids=["fast-path", "general-machine"])
def fast_paths(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    monkeypatch.setattr(patterns, "FAST_PATHS", request.param)
    return bool(request.param)


def open_matches(rt: engine.Runtime) -> int:
    parts = engine.runtime.state.decode(rt.snapshot())["parts"]
    state = next(p["state"]["pattern"] for key, p in parts.items() if key.startswith("query:"))
    if "open" in state:
        return len(state["open"])
    return sum(1 for p in state["partials"] if p[0] is not None)


def test_within_expires_partial_matches_on_the_clock_alone(fast_paths: bool) -> None:
    plan = DEFS + "from every e1=A -> e2=B within 1 sec select e1.v as a, e2.v as b insert into Out;"
    rt = engine.compile(plan, start_time=1000)
    rt.send("A", [(1,)], timestamps=1000)
    assert open_matches(rt) == 1
    rt.advance_to(2500)  # no event: the clock alone
    assert open_matches(rt) == 0


@pytest.mark.parametrize(
    "pattern",
    [
        "every e1=A -> e2=A[v > e1.v + 5]",
        "every e1=A[v > 20] -> e2=B[v < e1.v] within 30",
        "every e1=A -> e2=B",
        "every e1=A[v % 2 == 0] -> e2=A[e1.v == v] within 50",
    ],
)
def test_fast_path_matches_the_general_machine(pattern: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(zlib.crc32(pattern.encode()))
    items = []
    t = 1000
    for _ in range(300):
        t += rng.choice([0, 1, 3, 10, 40])
        items.append(ev(rng.choice("AB"), t, rng.randrange(30)))
        if rng.random() < 0.05:
            items.append({"time": t + rng.randrange(100)})
            t = items[-1]["time"]
    within = " within 40" if "within" not in pattern else ""
    plan = (
        DEFS
        + f"from {pattern.replace(' within 30', ' within 30 milliseconds').replace(' within 50', ' within 50 milliseconds')}{within.replace('40', '40 milliseconds')} select e1.v as a, e2.v as b insert into Out;"
    )
    results = []
    for flag in (True, False):
        monkeypatch.setattr(patterns, "FAST_PATHS", flag)
        results.append(run(plan, items).records)
    assert results[0] == results[1] and results[0]


def test_within_rejects_late_completions() -> None:
    items = [ev("A", 1000, 1), ev("B", 2500, 2), ev("A", 3000, 3), ev("B", 3500, 4)]
    c = run(DEFS + "from every e1=A -> e2=B within 1 sec select e1.v as a, e2.v as b insert into Out;", items)
    assert c.rows("Out") == [(3, 4)]


def test_counting_collects_between_min_and_max() -> None:
    items = [ev("A", 1000 + i, v) for i, v in enumerate([1, 2, 3])] + [ev("B", 1010, 9)]
    plan = (
        DEFS
        + "from e1=A<2:5> -> e2=B select e1[0].v as first, e1[last].v as last, e1[5].v as none, e2.v as b insert into Out;"
    )
    assert run(plan, items).rows("Out") == [(1, 3, None, 9)]


def test_logical_and_or_states() -> None:
    items = [ev("A", 1000, 1), ev("C", 1001, 3), ev("B", 1002, 2)]
    c = run(DEFS + "from e1=A -> e2=B and e3=C select e2.v as b, e3.v as c insert into Out;", items)
    assert c.rows("Out") == [(2, 3)]
    c = run(DEFS + "from e1=A -> e2=B or e3=C select e2.v as b, e3.v as c insert into Out;", items)
    assert c.rows("Out") == [(None, 3)]


def test_absent_pattern_fires_on_the_clock_alone() -> None:
    plan = DEFS + "from e1=A -> not B for 1 sec select e1.v as a insert into Out;"
    assert run(plan, [ev("A", 1000, 7), {"time": 2500}]).rows("Out") == [(7,)]
    assert run(plan, [ev("A", 1000, 7), ev("B", 1500, 0), {"time": 2500}]).rows("Out") == []


def test_sequences_need_consecutive_events() -> None:
    plan = DEFS + "from every e1=A, e2=B select e1.v as a, e2.v as b insert into Out;"
    assert run(plan, [ev("A", 1000, 1), ev("B", 1001, 2)]).rows("Out") == [(1, 2)]
    assert run(plan, [ev("A", 1000, 1), ev("C", 1001, 0), ev("B", 1002, 2)]).rows("Out") == [
        (1, 2)
    ]  # C is not in the query
    plan3 = DEFS + "from every e1=A, e2=C, e3=B select e1.v as a, e3.v as b insert into Out;"
    assert (
        run(plan3, [ev("A", 1000, 1), ev("B", 1001, 5), ev("C", 1002, 0), ev("B", 1003, 2)]).rows("Out") == []
    )


def test_sequence_one_or_more() -> None:
    plan = (
        DEFS
        + "from every e1=A, e2=B+, e3=C select e1.v as a, e2[0].v as b0, e2[last].v as bn, e3.v as c insert into Out;"
    )
    items = [ev("A", 1000, 1), ev("B", 1001, 2), ev("B", 1002, 3), ev("C", 1003, 4)]
    assert run(plan, items).rows("Out") == [(1, 2, 3, 4)]


def test_pattern_state_restores_exactly() -> None:
    plan = (
        DEFS + "from every e1=A -> e2=B[v > e1.v] within 5 sec select e1.v as a, e2.v as b insert into Out;"
    )
    items = [
        ev("A", 1000, 1),
        ev("A", 1100, 5),
        ev("B", 1200, 3),
        ev("B", 1300, 9),
        ev("A", 1400, 2),
        ev("B", 1500, 4),
    ]
    assert_restore_equivalent(plan, items)
    absent = DEFS + "from every e1=A -> not B for 1 sec select e1.v as a insert into Out;"
    assert_restore_equivalent(
        absent, [ev("A", 1000, 1), ev("A", 1200, 2), ev("B", 1500, 0), ev("A", 1700, 3), {"time": 5000}]
    )
