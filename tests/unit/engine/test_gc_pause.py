"""A chunk moves through a plan with the cyclic garbage collector paused, and only then."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

import engine
from engine.runtime.gc_pause import GcPause

PLAN = "define stream S (v double); from S[v > 1.0] select v insert into O;"


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    was = gc.isenabled()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def _runtime() -> tuple[engine.Runtime, list[bool]]:
    rt = engine.compile(PLAN, start_time=0)
    seen: list[bool] = []
    rt.subscribe_chunks("O", lambda _s, _c: seen.append(gc.isenabled()))
    return rt, seen


def test_paused_while_a_chunk_runs_and_running_again_after() -> None:
    gc.enable()
    rt, seen = _runtime()
    rt.send("S", [(2.0,), (3.0,)], timestamps=[1, 2])
    assert seen == [False]
    assert gc.isenabled()


def test_a_collector_switched_off_by_the_application_stays_off() -> None:
    gc.disable()
    rt, seen = _runtime()
    rt.send("S", [(2.0,)], timestamps=[1])
    assert seen == [False]
    assert not gc.isenabled()


def test_running_again_after_a_failing_subscriber() -> None:
    gc.enable()
    rt = engine.compile(PLAN, start_time=0)

    def fail(_s: str, _c: object) -> None:
        raise RuntimeError("subscriber failed")

    rt.subscribe_chunks("O", fail)
    with pytest.raises(RuntimeError, match="subscriber failed"):
        rt.send("S", [(2.0,)], timestamps=[1])
    assert gc.isenabled()


def test_a_send_from_inside_another_plans_subscriber_composes() -> None:
    gc.enable()
    inner, seen = _runtime()
    outer = engine.compile(PLAN, start_time=0)
    outer.subscribe_chunks("O", lambda _s, c: inner.send("S", c.rows, timestamps=c.ts))
    outer.send("S", [(2.0,)], timestamps=[1])
    assert seen == [False]
    assert gc.isenabled()


def test_timers_fire_paused_too() -> None:
    gc.enable()
    rt = engine.compile(
        "define stream S (v double); from S#window.timeBatch(1 sec) select sum(v) as s insert into O;",
        start_time=0,
    )
    seen: list[bool] = []
    rt.subscribe_chunks("O", lambda _s, _c: seen.append(gc.isenabled()))
    rt.send("S", [(2.0,)], timestamps=[10])
    rt.advance_to(5000)
    assert seen and not any(seen)
    assert gc.isenabled()


def test_cycles_made_during_a_chunk_are_collected_after_it() -> None:
    gc.enable()
    gc.collect()

    class Node:
        pass

    def make_cycles(_s: str, _c: object) -> None:
        for _ in range(1000):
            a, b = Node(), Node()
            a.other, b.other = b, a  # type: ignore[attr-defined]

    rt = engine.compile(PLAN, start_time=0)
    rt.subscribe_chunks("O", make_cycles)
    rt.send("S", [(2.0,)], timestamps=[1])
    assert gc.collect() >= 2000  # unreachable, and left for the collector once the chunk is done


def test_nested_pauses_lift_only_at_the_outermost() -> None:
    gc.enable()
    with GcPause():
        with GcPause():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_concurrent_sends_leave_the_collector_running() -> None:
    gc.enable()
    runtimes = [engine.compile(PLAN, start_time=0) for _ in range(4)]

    def feed(rt: engine.Runtime) -> None:
        for t in range(300):
            rt.send("S", [(2.0,), (0.5,)], timestamps=[t, t])

    threads = [threading.Thread(target=feed, args=(rt,)) for rt in runtimes]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert gc.isenabled()
