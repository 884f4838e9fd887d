"""Engine throughput: each workload through the embedding API vs. a hand-written
plain-Python loop computing the same result on the same data (the CPython floor).

    python scripts/bench_engine.py [--events N] [--chunk N] [--only a,b] [--per-key]

Prints one table row per workload: events/s of the engine, of the floor, and the ratio.
Both sides hand every output chunk to a sink. Timed runs use a sink that counts the rows and
lets them go, as an output adapter does; keeping a million rows alive would time the garbage
collector walking them instead. One more run of each side keeps every row, and the engine's
rows must equal the floor's. Rows (j) to (m) are partitions by one value key, each with 10
and with 10,000 keys; `--per-key` runs partitions as one query instance per key (the
engine's general path) instead of the keyed operators they fuse into.
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


Sink = Callable[[list[Any]], None]


def chunks(rows: Rows, ts: list[int], size: int) -> list[tuple[Rows, list[int]]]:
    return [(rows[i : i + size], ts[i : i + size]) for i in range(0, len(rows), size)]


FUSE = {"partitions": True}  # --per-key: partitions run one query instance per key


def run_engine(plan: str, stream: str, out: str, batches: list[tuple[Rows, list[int]]], emit: Sink) -> float:
    rt = engine.compile(plan, start_time=batches[0][1][0], fuse_partitions=FUSE["partitions"])
    rt.subscribe_chunks(out, lambda _s, c: emit(c.rows))
    t0 = time.perf_counter()
    for rows, ts in batches:
        rt.send(stream, rows, timestamps=ts)
    elapsed = time.perf_counter() - t0
    rt.shutdown()
    return elapsed


# ---- workloads ------------------------------------------------------------------------
# Each returns (label, engine, floor). Both sides hand every output chunk to `emit`: the
# engine through a subscription, the floor by calling it. `engine(emit)` returns the seconds
# its sends took; the floor is timed whole.


def w_filter(n: int, size: int) -> tuple[str, Any, Any]:
    rng = random.Random(1)
    rows = [(i, rng.random() * 100.0) for i in range(n)]
    ts = [1000 + i // 1000 for i in range(n)]
    batches = chunks(rows, ts, size)
    plan = "define stream S (id long, v double); from S[v > 50.0] select id, v * 2.0 as v2 insert into Out;"

    def floor(emit: Sink) -> None:
        for rows_, _ in batches:
            keep = [r[1] > 50.0 for r in rows_]
            emit([(r[0], r[1] * 2.0) for r in compress(rows_, keep)])

    return "(a) filter + projection", lambda emit: run_engine(plan, "S", "Out", batches, emit), floor


def w_sliding_avg(n: int, size: int) -> tuple[str, Any, Any]:
    rng = random.Random(2)
    rows = [(f"k{rng.randrange(10)}", rng.random() * 100.0) for _ in range(n)]
    ts = [1000 + i for i in range(n)]
    batches = chunks(rows, ts, size)
    plan = (
        "define stream S (k string, v double); "
        "from S#window.length(100) select k, avg(v) as a group by k insert into Out;"
    )

    def floor(emit: Sink) -> None:
        window: deque[tuple[Any, ...]] = deque()
        sums: dict[str, float] = {}
        counts: dict[str, int] = {}
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
            emit(list(last.values()))

    return "(b) length(100) avg by 10 keys", lambda emit: run_engine(plan, "S", "Out", batches, emit), floor


def w_time_sum(n: int, size: int) -> tuple[str, Any, Any]:
    rng = random.Random(3)
    rows = [(rng.random() * 10.0,) for _ in range(n)]
    ts = [1000 + i // 10 for i in range(n)]  # 10 events per ms: 10k events per 1 s window
    batches = chunks(rows, ts, size)
    plan = "define stream S (v double); from S#window.time(1 sec) select sum(v) as s insert into Out;"

    def floor(emit: Sink) -> None:
        window: deque[tuple[int, float]] = deque()
        total = 0.0
        count = 0
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
            emit([last])

    return "(c) time(1 sec) sum", lambda emit: run_engine(plan, "S", "Out", batches, emit), floor


def w_length_batch(n: int, size: int) -> tuple[str, Any, Any]:
    rows = [(i,) for i in range(n)]
    ts = [1000 + i for i in range(n)]
    batches = chunks(rows, ts, size)
    plan = "define stream S (v long); from S#window.lengthBatch(1000) select count() as c insert into Out;"

    def floor(emit: Sink) -> None:
        pending = 0
        for rows_, _ in batches:
            out: list[Any] = []
            for _r in rows_:
                pending += 1
                if pending == 1000:
                    out.append((1000,))
                    pending = 0
            emit(out)

    return "(d) lengthBatch(1000) count", lambda emit: run_engine(plan, "S", "Out", batches, emit), floor


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

    def floor(emit: Sink) -> None:
        for rows_, _ in batches:
            a = [(r[0], r[1]) for r in rows_ if r[1] > 10.0]
            b = [(r[0], r[1] * 2.0) for r in a]
            c = [(r[0], r[1] + 1.0) for r in b if r[1] < 150.0]
            emit([(r[0], r[1]) for r in c])

    return "(e) 4-query chain", lambda emit: run_engine(plan, "S", "D", batches, emit), floor


def w_pattern(n: int, size: int) -> tuple[str, Any, Any]:
    rng = random.Random(6)
    rows = [(rng.randrange(1000), rng.random() * 100.0) for _ in range(n)]
    ts = [1000 + i for i in range(n)]
    batches = chunks(rows, ts, size)
    plan = """
    define stream S (k int, v double);
    partition with (k of S) begin
      from every e1=S -> e2=S[e1.k == k and v > e1.v + 5] within 10 sec
      select e1.k as k, e1.v as v1, e2.v as v2 insert into Out;
    end;
    """

    def floor(emit: Sink) -> None:
        pending: dict[int, list[tuple[int, float]]] = {}
        for rows_, ts_ in batches:
            out: list[Any] = []
            for t, (k, v) in zip(ts_, rows_, strict=True):
                waiting = pending.get(k)
                if waiting is None:
                    waiting = pending[k] = []
                keep = []
                for t1, v1 in waiting:
                    if t - t1 > 10_000:
                        continue
                    if v > v1 + 5:
                        out.append((k, v1, v))
                    else:
                        keep.append((t1, v1))
                keep.append((t, v))
                pending[k] = keep
            emit(out)

    return (
        "(f) pattern in partition, 1000 keys",
        lambda emit: run_engine(plan, "S", "Out", batches, emit),
        floor,
    )


def w_join(n: int, size: int) -> tuple[str, Any, Any]:
    rng = random.Random(7)
    rows = [(rng.randrange(100), i) for i in range(n)]
    ts = [1000 + i for i in range(n)]
    half = size // 2
    batches = []
    for i in range(0, n, size):
        batches.append(("A", rows[i : i + half], ts[i : i + half]))
        batches.append(("B", rows[i + half : i + size], ts[i + half : i + size]))
    plan = """
    define stream A (k int, x long); define stream B (k int, y long);
    from A#window.length(100) join B#window.length(100) on A.k == B.k
    select A.x, B.y insert into Out;
    """

    def engine_run(emit: Sink) -> float:
        rt = engine.compile(plan, start_time=1000)
        rt.subscribe_chunks("Out", lambda _s, c: emit(c.rows))
        t0 = time.perf_counter()
        for stream, rows_, ts_ in batches:
            rt.send(stream, rows_, timestamps=ts_)
        return time.perf_counter() - t0

    def floor(emit: Sink) -> None:
        wa: deque[tuple[int, int]] = deque()
        wb: deque[tuple[int, int]] = deque()
        for stream, rows_, _ in batches:
            out: list[Any] = []
            mine, other = (wa, wb) if stream == "A" else (wb, wa)
            for r in rows_:
                mine.append(r)
                if len(mine) > 100:
                    mine.popleft()
                k = r[0]
                if stream == "A":
                    out.extend((r[1], o[1]) for o in other if o[0] == k)
                else:
                    out.extend((o[1], r[1]) for o in other if o[0] == k)
            emit(out)

    return "(g) length(100) stream-stream join", engine_run, floor


def w_upsert(n: int, size: int) -> tuple[str, Any, Any]:
    rng = random.Random(8)
    rows = [(rng.randrange(10_000), rng.random()) for _ in range(n)]
    ts = [1000 + i for i in range(n)]
    batches = chunks(rows, ts, size)
    plan = """
    define stream S (k int, v double);
    @PrimaryKey('k') define table T (k int, v double);
    from S update or insert into T on T.k == k;
    define stream Q (x int);
    from Q join T select T.k, T.v insert into Out;
    """

    def engine_run(emit: Sink) -> float:
        rt = engine.compile(plan, start_time=1000)
        rt.subscribe_chunks("Out", lambda _s, c: emit(c.rows))
        t0 = time.perf_counter()
        for rows_, ts_ in batches:
            rt.send("S", rows_, timestamps=ts_)
        elapsed = time.perf_counter() - t0
        rt.send("Q", [(0,)], timestamps=ts[-1])  # the table's content, outside the timing
        return elapsed

    def floor(emit: Sink) -> None:
        table: dict[int, tuple[int, float]] = {}
        for rows_, _ in batches:
            for r in rows_:
                table[r[0]] = r
        emit([table[k] for k in sorted(table)])

    return "(h) update or insert, 10k keys", engine_run, floor


def w_incremental(n: int, size: int) -> tuple[str, Any, Any]:
    rng = random.Random(9)
    start = 1767182400000  # 2025-12-31 12:00 UTC: the buckets cross a day, a month and a year
    rows = [(f"k{rng.randrange(10)}", float(rng.randrange(100)), start + i * 100) for i in range(n)]
    ts = [r[2] for r in rows]
    batches = chunks(rows, ts, size)
    plan = """
    define stream S (k string, v double, ts long);
    define aggregation A from S select k, sum(v) as total, avg(v) as a, count() as n
    group by k aggregate by ts every sec ... year;
    """
    read = 'from A within 0L, 4102444800000L per "hours"'

    def engine_run(emit: Sink) -> float:
        rt = engine.compile(plan, start_time=1000)
        t0 = time.perf_counter()
        for rows_, ts_ in batches:
            rt.send("S", rows_, timestamps=ts_)
        elapsed = time.perf_counter() - t0
        emit([tuple(e.data) for e in rt.query(read)])  # the hours' buckets, outside the timing
        rt.shutdown()
        return elapsed

    def floor(emit: Sink) -> None:
        from datetime import UTC, datetime

        units = (1000, 60_000, 3_600_000, 86_400_000)
        stores: list[dict[tuple[int, str], list[float]]] = [{} for _ in range(6)]
        calendar: dict[int, tuple[int, int]] = {}  # day -> (month start, year start)
        for rows_, _ in batches:
            for k, v, t in rows_:
                day = t - t % 86_400_000
                cal = calendar.get(day)
                if cal is None:
                    d = datetime.fromtimestamp(day / 1000, UTC)
                    month = int(datetime(d.year, d.month, 1, tzinfo=UTC).timestamp()) * 1000
                    year = int(datetime(d.year, 1, 1, tzinfo=UTC).timestamp()) * 1000
                    cal = calendar[day] = (month, year)
                starts = (t - t % units[0], t - t % units[1], t - t % units[2], day, cal[0], cal[1])
                for store, b in zip(stores, starts, strict=True):
                    st = store.get((b, k))
                    if st is None:
                        store[(b, k)] = [v, 1]
                    else:
                        st[0] += v
                        st[1] += 1
        emit([(b, k, s, s / c, c) for (b, k), (s, c) in stores[2].items()])

    return "(i) incremental aggregation sec...year", engine_run, floor


# ---- per key: partitions by one value key (10 keys, then 10,000 keys) ---------------------
# The engine sends each chunk to the partition, which sends each run of consecutive events of
# one key to that key's queries as one chunk: an aggregating selector emits once per run (its
# last event), a pattern once per match. The floors compute exactly that by hand.


def _keyed_rows(seed: int, n: int, keys: int) -> tuple[Rows, list[int]]:
    rng = random.Random(seed)
    rows = [(rng.randrange(keys), round(rng.random() * 100.0, 2), 1000 + i) for i in range(n)]
    return rows, [1000 + i for i in range(n)]


def w_keyed_length(n: int, size: int, keys: int) -> tuple[str, Any, Any]:
    rows, ts = _keyed_rows(10, n, keys)
    batches = chunks(rows, ts, size)
    plan = """
    define stream S (k int, v double, ts long);
    partition with (k of S) begin
      from S#window.length(100) select k, avg(v) as a insert into Out;
    end;
    """

    def floor(emit: Sink) -> None:
        wins: dict[int, list[Any]] = {}
        for rows_, _ in batches:
            out: list[Any] = []
            run_key = None
            last = None
            for k, v, _x in rows_:
                if k != run_key:
                    if last is not None:
                        out.append(last)
                    run_key = k
                st = wins.get(k)
                if st is None:
                    st = wins[k] = [deque(), 0.0, 0]
                buf = st[0]
                if len(buf) == 100:
                    st[1] -= buf.popleft()
                    st[2] -= 1
                buf.append(v)
                st[1] += v
                st[2] += 1
                last = (k, st[1] / st[2])
            if last is not None:
                out.append(last)
            emit(out)

    label = f"(j) length(100) avg, {keys:,} keys"
    return label, lambda emit: run_engine(plan, "S", "Out", batches, emit), floor


def w_keyed_external(n: int, size: int, keys: int) -> tuple[str, Any, Any]:
    rows, ts = _keyed_rows(11, n, keys)
    batches = chunks(rows, ts, size)
    plan = """
    define stream S (k int, v double, ts long);
    partition with (k of S) begin
      from S#window.externalTime(ts, 1 min) select k, avg(v) as a insert into Out;
    end;
    """

    def floor(emit: Sink) -> None:
        wins: dict[int, list[Any]] = {}
        for rows_, _ in batches:
            out: list[Any] = []
            run_key = None
            last = None
            for k, v, x in rows_:
                if k != run_key:
                    if last is not None:
                        out.append(last)
                    run_key = k
                st = wins.get(k)
                if st is None:
                    st = wins[k] = [deque(), 0.0, 0]
                buf = st[0]
                while buf and buf[0][0] + 60_000 <= x:
                    st[1] -= buf.popleft()[1]
                    st[2] -= 1
                buf.append((x, v))
                st[1] += v
                st[2] += 1
                last = (k, st[1] / st[2])
            if last is not None:
                out.append(last)
            emit(out)

    label = f"(k) externalTime(1 min) avg, {keys:,} keys"
    return label, lambda emit: run_engine(plan, "S", "Out", batches, emit), floor


def w_keyed_external_batch(n: int, size: int, keys: int) -> tuple[str, Any, Any]:
    rows, ts = _keyed_rows(12, n, keys)
    batches = chunks(rows, ts, size)
    plan = """
    define stream S (k int, v double, ts long);
    partition with (k of S) begin
      from S#window.externalTimeBatch(ts, 10 sec) select k, avg(v) as a insert into Out;
    end;
    """

    def floor(emit: Sink) -> None:
        # per key: [batch start, batch end, latest time, sum, count]
        wins: dict[int, list[Any]] = {}
        for rows_, _ in batches:
            out: list[Any] = []
            for k, v, x in rows_:
                st = wins.get(k)
                if st is None:
                    st = wins[k] = [x, x + 10_000, x, 0.0, 0]
                if x > st[2]:
                    st[2] = x
                if x >= st[1]:
                    if st[4]:
                        out.append((k, st[3] / st[4]))
                    st[3] = 0.0
                    st[4] = 0
                    st[1] = st[2] + (10_000 - (st[2] - st[0]) % 10_000)
                st[3] += v
                st[4] += 1
            emit(out)

    label = f"(l) externalTimeBatch(10 sec) avg, {keys:,} keys"
    return label, lambda emit: run_engine(plan, "S", "Out", batches, emit), floor


def w_keyed_sequence(n: int, size: int, keys: int) -> tuple[str, Any, Any]:
    rows, ts = _keyed_rows(13, n, keys)
    batches = chunks(rows, ts, size)
    plan = """
    define stream S (k int, temp double, ts long);
    partition with (k of S) begin
      from every e1=S, e2=S[temp > e1.temp + 1]
      select e1.k as k, e1.temp as t1, e2.temp as t2 insert into Out;
    end;
    """

    def floor(emit: Sink) -> None:
        previous: dict[int, float] = {}
        for rows_, _ in batches:
            out: list[Any] = []
            for k, temp, _x in rows_:
                before = previous.get(k)
                if before is not None and temp > before + 1:
                    out.append((k, before, temp))
                previous[k] = temp
            emit(out)

    label = f"(m) sequence A,B rising temp, {keys:,} keys"
    return label, lambda emit: run_engine(plan, "S", "Out", batches, emit), floor


def per_key(workload: Callable[[int, int, int], tuple[str, Any, Any]]) -> list[Callable[[int, int], Any]]:
    return [
        lambda n, size: workload(n, size, 10),
        lambda n, size: workload(n, size, 10_000),
    ]


WORKLOADS: dict[str, Callable[[int, int], Any] | list[Callable[[int, int], Any]]] = {
    "a": w_filter,
    "b": w_sliding_avg,
    "c": w_time_sum,
    "d": w_length_batch,
    "e": w_chain,
    "f": w_pattern,
    "g": w_join,
    "h": w_upsert,
    "i": w_incremental,
    "j": per_key(w_keyed_length),
    "k": per_key(w_keyed_external),
    "l": per_key(w_keyed_external_batch),
    "m": per_key(w_keyed_sequence),
}


class Counter:
    """The timed runs' sink: counts rows and lets them go, as an output adapter would."""

    def __init__(self) -> None:
        self.rows = 0

    def __call__(self, rows: list[Any]) -> None:
        self.rows += len(rows)


def best_time(run: Callable[[Sink], float | None], repeat: int) -> tuple[float, int]:
    """The fastest of `repeat` runs into a counting sink, and the rows it counted."""
    best, rows = float("inf"), -1
    for _ in range(repeat):
        sink = Counter()
        t0 = time.perf_counter()
        elapsed = run(sink)
        took = time.perf_counter() - t0 if elapsed is None else elapsed
        if took < best:
            best, rows = took, sink.rows
    return best, rows


def collected(run: Callable[[Sink], float | None]) -> list[Any]:
    out: list[Any] = []
    run(out.extend)
    return out


MEMORY_PLAN = """
define stream S (k long, v double);
{purge}
partition with (k of S) begin
  from S#window.length(10) select k, avg(v) as a insert into Out;
end;
"""


def memory_probe(purge: bool, events: int, keys: int) -> None:
    """Run in a subprocess: stream `events` over `keys` distinct keys (each key is active for
    a short while, then never seen again) and print the peak RSS and live partition keys."""
    import resource

    from engine.runtime import state

    annotation = "@purge(enable='true', interval='1 sec', idle.period='2 sec')" if purge else ""
    rt = engine.compile(MEMORY_PLAN.format(purge=annotation), start_time=0)
    per_key = max(1, events // keys)
    t = 0
    batch: list[tuple[Any, ...]] = []
    for i in range(events):
        batch.append((i // per_key, float(i)))
        if len(batch) == 1000:
            t += 10
            rt.send("S", batch, timestamps=t)
            batch = []
    rt.advance_to(t + 5000)
    parts = state.decode(rt.snapshot())["parts"]
    held = next(p["state"] for key, p in parts.items() if key.startswith("partition:"))
    live = len(held["keys"] if isinstance(held, dict) else held)  # a fused partition lists "keys"
    print(f"{peak_rss_mb(resource):.0f} {live}")


def peak_rss_mb(resource: Any) -> float:
    """This process's peak RSS. Linux's ru_maxrss survives exec, so a probe started from a
    big parent would report the parent's size: VmHWM (reset by exec) is read instead."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024


def memory_table(events: int, keys: int) -> None:
    import subprocess

    print(f"\npartition memory: {events:,} events over {keys:,} distinct keys, length(10) avg per key")
    print(f"{'':34} {'peak RSS MB':>14} {'live keys':>14}")
    for purge in (True, False):
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--memory-probe",
                "1" if purge else "0",
                "--events",
                str(events),
                "--keys",
                str(keys),
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        label = "with @purge (idle 2 s)" if purge else "without @purge"
        print(f"{label:34} {float(out[0]):14,.0f} {int(out[1]):14,}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=10_000)
    parser.add_argument("--only", default="", help="comma-separated workload letters")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs of each side; the fastest counts (as timeit does)"
    )
    parser.add_argument("--keys", type=int, default=100_000, help="distinct partition keys of the memory run")
    parser.add_argument("--memory-probe", choices=["0", "1"], help=argparse.SUPPRESS)
    parser.add_argument("--no-memory", action="store_true", help="skip the partition memory run")
    parser.add_argument(
        "--per-key",
        action="store_true",
        help="partitions run one query instance per key (fuse_partitions=False)",
    )
    args = parser.parse_args()
    FUSE["partitions"] = not args.per_key
    if args.memory_probe is not None:
        memory_probe(args.memory_probe == "1", args.events, args.keys)
        return 0
    chosen = [w for w in args.only.split(",") if w] or list(WORKLOADS)
    print(
        f"{args.events:,} events per workload, chunks of {args.chunk:,} events, "
        f"best of {args.repeat} runs into a counting sink"
    )
    print(
        f"yardstick: a plain list comprehension filters {yardstick(args.events, args.chunk):,.0f} events/s here"
    )
    print(f"{'workload':44} {'engine ev/s':>14} {'floor ev/s':>14} {'ratio':>7}")
    failed = False
    runs = []
    for key in chosen:
        entry = WORKLOADS[key]
        runs += entry if isinstance(entry, list) else [entry]
    for make in runs:
        label, eng, floor = make(args.events, args.chunk)
        same = _same(collected(eng), collected(floor))
        e_time, e_rows = best_time(eng, args.repeat)
        f_time, f_rows = best_time(floor, args.repeat)
        same &= e_rows == f_rows
        failed |= not same
        e_rate, f_rate = args.events / e_time, args.events / f_time
        note = "" if same else "  RESULTS DIFFER"
        print(f"{label:44} {e_rate:14,.0f} {f_rate:14,.0f} {e_rate / f_rate:7.2f}{note}")
    if not args.no_memory and not args.only:
        memory_table(args.events, args.keys)
    return 1 if failed else 0


def yardstick(n: int, size: int) -> float:
    """How fast this machine runs `[r for r in rows if r[1] > 50.0]`: targets scale with it."""
    rng = random.Random(9)
    rows = [(i, rng.random() * 100.0) for i in range(n)]
    parts = [rows[i : i + size] for i in range(0, n, size)]
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for part in parts:
            [r for r in part if r[1] > 50.0]
        best = min(best, time.perf_counter() - t0)
    return n / best


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
