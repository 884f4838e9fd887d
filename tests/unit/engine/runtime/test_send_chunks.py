"""`Runtime.send_chunks`: a run of chunks under one lock hold, with exactly what one `send`
per chunk does (the clock, timers fired before each chunk, the chunks subscribers see)."""

from __future__ import annotations

import gc
import random
from typing import Any

import pytest

import engine
from engine.errors import CEPError

PLANS = {
    "time window": """
define stream S (k string, v double);
from S#window.time(3 millisec) select k, sum(v) as total insert all events into O;
""",
    "time batch": """
define stream S (k string, v double);
from S#window.timeBatch(4 millisec) select k, count() as n group by k insert into O;
""",
    "pattern within": """
define stream S (k string, v double);
from every e1=S -> e2=S[e1.v + 1.0 <= v] within 5 millisec
select e1.k as k, e1.v as a, e2.v as b insert into O;
""",
    "absent": """
define stream S (k string, v double);
from every e1=S[v > 5.0] -> not S[v < 2.0] for 3 millisec select e1.k as k, e1.v as v insert into O;
""",
    "partition": """
define stream S (k string, v double);
partition with (k of S)
begin
    from S#window.length(3) select k, avg(v) as a insert into O;
    from every e1=S -> e2=S[e1.v < v] within 4 millisec select e1.k as k, e2.v as v insert into P;
end;
""",
    "floats": """
define stream S (k string, v float);
from S#window.time(2 millisec) select k, max(v) as m insert all events into O;
""",
}


def _chunks(seed: int) -> list[tuple[int, list[tuple[Any, ...]]]]:
    rnd = random.Random(seed)
    t = 1000
    out: list[tuple[int, list[tuple[Any, ...]]]] = []
    for _ in range(120):
        t += rnd.choice([0, 0, 1, 1, 2, 3, 7])
        n = rnd.choice([1, 1, 1, 2, 3, 0])
        out.append((t, [(f"k{rnd.randrange(3)}", round(rnd.uniform(0, 9), 1)) for _ in range(n)]))
    return out


def _recorded(plan: str, fuse: bool, start_time: int | None) -> tuple[engine.Runtime, list[Any]]:
    rt = engine.compile(plan, start_time=start_time, fuse_partitions=fuse)
    log: list[Any] = []
    for s in rt.output_streams:
        rt.subscribe_chunks(
            s, lambda stream, c: log.append((stream, rt.now(), list(c.ts), list(c.rows), c.kinds, c.uniform))
        )
    return rt, log


@pytest.mark.parametrize("name", sorted(PLANS))
@pytest.mark.parametrize("fuse", [True, False])
@pytest.mark.parametrize("start_time", [None, 990])
def test_the_same_as_one_send_per_chunk(name: str, fuse: bool, start_time: int | None) -> None:
    plan = PLANS[name]
    for seed in range(3):
        chunks = _chunks(seed)
        one, by_send = _recorded(plan, fuse, start_time)
        for n, (t, rows) in enumerate(chunks):
            if rows:
                by_send.append(("before", n))
            one.send("S", rows, timestamps=t)
            if n % 40 == 39:
                one.advance_to(t + 2)
        run, by_run = _recorded(plan, fuse, start_time)
        for piece in range(3):
            at = piece * 40
            part = chunks[at : at + 40]
            run.send_chunks("S", part, lambda i, at=at, log=by_run: log.append(("before", at + i)))
            run.advance_to(part[-1][0] + 2)
        assert by_run == by_send
        assert any(entry[0] != "before" for entry in by_send)
        assert run.now() == one.now() and run.next_timer() == one.next_timer()


def test_before_sees_the_chunk_not_yet_in() -> None:
    rt = engine.compile("define stream S (v int); from S select v insert into O;", start_time=0)
    seen: list[Any] = []
    rt.subscribe_chunks("O", lambda _s, c: seen.append(list(c.rows)))
    rt.send_chunks("S", [(1, [(1,)]), (2, []), (3, [(2,), (3,)])], lambda i: seen.append(i))
    assert seen == [0, [(1,)], 2, [(2,), (3,)]]
    assert rt.now() == 3


def test_one_collector_pause_for_the_run() -> None:
    was = gc.isenabled()
    gc.enable()
    try:
        rt = engine.compile("define stream S (v int); from S select v insert into O;", start_time=0)
        seen: list[bool] = []
        rt.subscribe_chunks("O", lambda _s, _c: seen.append(gc.isenabled()))
        rt.send_chunks("S", [(1, [(1,)]), (2, [(2,)])])
        assert seen == [False, False]
        assert gc.isenabled()
    finally:
        if not was:
            gc.disable()


def test_shut_down_refuses_and_lists_rows_become_tuples() -> None:
    rt = engine.compile("define stream S (v int); from S select v insert into O;", start_time=0)
    seen: list[Any] = []
    rt.subscribe_chunks("O", lambda _s, c: seen.extend(c.rows))
    rt.send_chunks("S", [(1, [[5]])])  # type: ignore[list-item]
    assert seen == [(5,)]
    rt.shutdown()
    with pytest.raises(CEPError, match="shut down"):
        rt.send_chunks("S", [(2, [(1,)])])
    with pytest.raises(CEPError, match="not defined"):
        rt.send_chunks("T", [(2, [(1,)])])


def test_wall_clock_is_send_per_chunk() -> None:
    now = [100]
    rt = engine.compile(
        "define stream S (v int); from S select v insert into O;", clock="wall", wall_time=lambda: now[0]
    )
    seen: list[Any] = []
    rt.subscribe_chunks("O", lambda _s, c: seen.append((list(c.ts), list(c.rows))))
    rt.send_chunks("S", [(1, [(1,)]), (2, []), (3, [(2,)])], lambda i: seen.append(i))
    assert seen == [0, ([1], [(1,)]), 2, ([3], [(2,)])]
