"""Engine throughput: each workload through the embedding API vs. a hand-written
plain-Python loop computing the same result on the same data (the CPython floor).

    python scripts/bench_engine.py [--events N] [--chunk N] [--only a,b]

Prints one table row per workload: events/s of the engine, of the floor, and the ratio.
Results are cross-checked: the engine's output must equal the floor's.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import deque
from collections.abc import Callable
from itertools import compress
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import engine  # noqa: E402

Rows = list[tuple[Any, ...]]


def chunks(rows: Rows, ts: list[int], size: int) -> list[tuple[Rows, list[int]]]:
    return [(rows[i : i + size], ts[i : i + size]) for i in range(0, len(rows), size)]


def run_engine(
    plan: str, stream: str, out: str, batches: list[tuple[Rows, list[int]]]
) -> tuple[float, list[Any]]:
    rt = engine.compile(plan, start_time=batches[0][1][0])
    got: list[Any] = []
    rt.subscribe_chunks(out, lambda _s, c: got.extend(c.rows))
    t0 = time.perf_counter()
    for rows, ts in batches:
        rt.send(stream, rows, timestamps=ts)
    elapsed = time.perf_counter() - t0
    rt.shutdown()
    return elapsed, got


def timed(fn: Callable[[], list[Any]]) -> tuple[float, list[Any]]:
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


# ---- workloads ------------------------------------------------------------------------


def w_filter(n: int, size: int) -> tuple[str, Any, Any]:
    rng = random.Random(1)
    rows = [(i, rng.random() * 100.0) for i in range(n)]
    ts = [1000 + i // 1000 for i in range(n)]
    batches = chunks(rows, ts, size)
    plan = "define stream S (id long, v double); from S[v > 50.0] select id, v * 2.0 as v2 insert into Out;"

    def floor() -> list[Any]:
        out: list[Any] = []
        for rows_, _ in batches:
            keep = [r[1] > 50.0 for r in rows_]
            out.extend([(r[0], r[1] * 2.0) for r in compress(rows_, keep)])
        return out

    return "(a) filter + projection", lambda: run_engine(plan, "S", "Out", batches), floor


def w_sliding_avg(n: int, size: int) -> tuple[str, Any, Any]:
    rng = random.Random(2)
    rows = [(f"k{rng.randrange(10)}", rng.random() * 100.0) for _ in range(n)]
    ts = [1000 + i for i in range(n)]
    batches = chunks(rows, ts, size)
    plan = (
        "define stream S (k string, v double); "
        "from S#window.length(100) select k, avg(v) as a group by k insert into Out;"
    )

    def floor() -> list[Any]:
        window: deque[tuple[Any, ...]] = deque()
        sums: dict[str, float] = {}
        counts: dict[str, int] = {}
        out: list[Any] = []
        for rows_, _ in batches:
            last: dict[str, tuple[Any, ...]] = {}
            for r in rows_:
                if len(window) == 100:
                    k0, v0 = window.popleft()
                    sums[k0] -= v0
                    counts[k0] -= 1
                k, v = r
                window.append(r)
                sums[k] = sums.get(k, 0.0) + v
                counts[k] = counts.get(k, 0) + 1
                last[k] = (k, sums[k] / counts[k])
            out.extend(last.values())
        return out

    return "(b) length(100) avg by 10 keys", lambda: run_engine(plan, "S", "Out", batches), floor


def w_time_sum(n: int, size: int) -> tuple[str, Any, Any]:
    rng = random.Random(3)
    rows = [(rng.random() * 10.0,) for _ in range(n)]
    ts = [1000 + i // 10 for i in range(n)]  # 10 events per ms: 10k events per 1 s window
    batches = chunks(rows, ts, size)
    plan = "define stream S (v double); from S#window.time(1 sec) select sum(v) as s insert into Out;"

    def floor() -> list[Any]:
        window: deque[tuple[int, float]] = deque()
        total = 0.0
        count = 0
        out: list[Any] = []
        for rows_, ts_ in batches:
            now = ts_[-1]
            last = None
            for t, r in zip(ts_, rows_, strict=True):
                while window and window[0][0] + 1000 <= now:
                    _, v0 = window.popleft()
                    total -= v0
                    count -= 1
                window.append((t, r[0]))
                total += r[0]
                count += 1
                last = (total if count else None,)
            out.append(last)
        return out

    return "(c) time(1 sec) sum", lambda: run_engine(plan, "S", "Out", batches), floor


def w_length_batch(n: int, size: int) -> tuple[str, Any, Any]:
    rows = [(i,) for i in range(n)]
    ts = [1000 + i for i in range(n)]
    batches = chunks(rows, ts, size)
    plan = "define stream S (v long); from S#window.lengthBatch(1000) select count() as c insert into Out;"

    def floor() -> list[Any]:
        out: list[Any] = []
        pending = 0
        for rows_, _ in batches:
            for _r in rows_:
                pending += 1
                if pending == 1000:
                    out.append((1000,))
                    pending = 0
        return out

    return "(d) lengthBatch(1000) count", lambda: run_engine(plan, "S", "Out", batches), floor


def w_chain(n: int, size: int) -> tuple[str, Any, Any]:
    rng = random.Random(5)
    rows = [(i, rng.random() * 100.0) for i in range(n)]
    ts = [1000 + i // 1000 for i in range(n)]
    batches = chunks(rows, ts, size)
    plan = """
    define stream S (id long, v double);
    from S[v > 10.0] select id, v insert into A;
    from A select id, v * 2.0 as v insert into B;
    from B[v < 150.0] select id, v + 1.0 as v insert into C;
    from C select id, v insert into D;
    """

    def floor() -> list[Any]:
        out: list[Any] = []
        for rows_, _ in batches:
            a = [(r[0], r[1]) for r in rows_ if r[1] > 10.0]
            b = [(r[0], r[1] * 2.0) for r in a]
            c = [(r[0], r[1] + 1.0) for r in b if r[1] < 150.0]
            out.extend([(r[0], r[1]) for r in c])
        return out

    return "(e) 4-query chain", lambda: run_engine(plan, "S", "D", batches), floor


WORKLOADS = {"a": w_filter, "b": w_sliding_avg, "c": w_time_sum, "d": w_length_batch, "e": w_chain}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=10_000)
    parser.add_argument("--only", default="", help="comma-separated workload letters")
    args = parser.parse_args()
    chosen = [w for w in args.only.split(",") if w] or list(WORKLOADS)
    print(f"{args.events:,} events per workload, chunks of {args.chunk:,} events")
    print(f"{'workload':34} {'engine ev/s':>14} {'floor ev/s':>14} {'ratio':>7}")
    failed = False
    for key in chosen:
        label, eng, floor = WORKLOADS[key](args.events, args.chunk)
        e_time, e_out = eng()
        f_time, f_out = timed(floor)
        same = _same(e_out, f_out)
        failed |= not same
        e_rate, f_rate = args.events / e_time, args.events / f_time
        note = "" if same else "  RESULTS DIFFER"
        print(f"{label:34} {e_rate:14,.0f} {f_rate:14,.0f} {e_rate / f_rate:7.2f}{note}")
    return 1 if failed else 0


def _same(a: list[Any], b: list[Any]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        for u, v in zip(x, y, strict=True):
            if isinstance(u, float) and isinstance(v, float):
                if abs(u - v) > 1e-6 * max(1.0, abs(u)):
                    return False
            elif u != v:
                return False
    return True


if __name__ == "__main__":
    sys.exit(main())
