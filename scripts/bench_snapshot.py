"""What snapshots cost a running plan: the pause one event sees while a snapshot is taken, the
time to restore that state, and the input log's append cost.

A partition of 10,000 keys (a length window per key) is fed 1,000 events/s, one event per
send, as a receiver would, while another thread snapshots it every 5 s the way the node does
(`Runtime.capture()` under the plan's lock, `Capture.encode()` outside it). Each send is
timed; the table shows the latency of the sends that overlapped a snapshot against the
others, with captures and, for comparison, with a whole `snapshot()` under the lock (what the
node would do without captures). A send that overlaps the encoding also waits for Python's
GIL, which the encoding thread holds for up to the switch interval (5 ms) at a time. Then the state is restored into a fresh runtime, and the input log appends
the same bundles with and without fsync.

    .venv/bin/python scripts/bench_snapshot.py [--keys 10000] [--seconds 20]

Targets (issue: persistence mode): p99 pause <= 50 ms, restore <= 1 s.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import engine
from app.persistence.input_log import Events, FsyncPolicy, InputLog

PLAN = (
    "define stream S (k string, v double); partition with (k of S) begin "
    "from S#window.length(5) select k, sum(v) as t insert into O; end;"
)
# one query instance per key, as measured in docs/performance.md (fused into one keyed operator, the
# same partition's state is smaller and quicker to capture: see scripts/bench_capture.py)
FUSE = False


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] if ordered else 0.0


def feed(
    rt: engine.Runtime, keys: int, seconds: float, snapshot: Callable[[], None], every: float
) -> tuple[list[float], list[float]]:
    """Send one event per millisecond for `seconds`, snapshotting every `every` s in another
    thread; return the latencies in ms of the sends that overlapped a snapshot, and of the rest."""
    stop = threading.Event()
    spans: list[tuple[float, float]] = []

    def snapshots() -> None:
        while not stop.wait(every):
            t0 = time.perf_counter()
            snapshot()
            spans.append((t0, time.perf_counter()))

    thread = threading.Thread(target=snapshots, daemon=True)
    thread.start()
    sends: list[tuple[float, float]] = []
    start = time.perf_counter()
    n = 0
    while (now := time.perf_counter()) - start < seconds:
        due = start + n / 1000
        if now < due:
            time.sleep(due - now)
        t0 = time.perf_counter()
        rt.send("S", [(f"k{n % keys}", float(n))], 10_000 + n)
        sends.append((t0, time.perf_counter()))
        n += 1
    stop.set()
    thread.join()
    during: list[float] = []
    rest: list[float] = []
    for t0, t1 in sends:
        overlapped = any(t0 < end and t1 > begin for begin, end in spans)
        (during if overlapped else rest).append((t1 - t0) * 1000)
    return during, rest


def warmed(keys: int) -> engine.Runtime:
    rt = engine.compile(PLAN, start_time=1000, fuse_partitions=FUSE)
    rt.send("S", [(f"k{i}", float(j)) for j in range(3) for i in range(keys)], 1000)
    return rt


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--every", type=float, default=5.0)
    args = parser.parse_args()

    print(f"{args.keys:,} keys, 1,000 events/s for {args.seconds:g} s, a snapshot every {args.every:g} s")
    print(f"{'snapshot taken by':<34} {'sends':>6} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7}")
    blob = b""
    for label in ("capture under the lock, encode out", "whole snapshot under the lock"):
        rt = warmed(args.keys)
        blobs: list[bytes] = []

        def take(rt: engine.Runtime = rt, label: str = label, blobs: list[bytes] = blobs) -> None:
            if label.startswith("capture"):
                blobs.append(rt.capture().encode())
            else:
                with rt._lock:  # the old way: capture and encode while holding the plan  # noqa: SLF001
                    blobs.append(rt.snapshot())

        during, rest = feed(rt, args.keys, args.seconds, take, args.every)
        for what, latencies in ((label, during), ("  (sends between snapshots)", rest)):
            print(
                f"{what:<34} {len(latencies):>6} {statistics.median(latencies):>7.2f} "
                f"{percentile(latencies, 99):>7.2f} {max(latencies):>7.1f}"
            )
        blob = blobs[-1] if blobs else rt.snapshot()

    restores = []
    for _ in range(3):
        fresh = engine.compile(PLAN, start_time=1000, fuse_partitions=FUSE)
        t0 = time.perf_counter()
        fresh.restore(blob)
        restores.append(time.perf_counter() - t0)
    print(f"restore of {len(blob):,} bytes: {min(restores) * 1000:.0f} ms (best of 3)")

    bundle = Events("S", [10_000 + i for i in range(100)], [(f"k{i}", float(i)) for i in range(100)])
    print(f"{'input log, bundles of 100 events':<34} {'events/s':>10}")
    for policy in ("off", "interval", "always"):
        with tempfile.TemporaryDirectory() as tmp:
            log = InputLog(Path(tmp), FsyncPolicy(policy))
            t0 = time.perf_counter()
            n = 0
            while time.perf_counter() - t0 < 2.0:
                log.append("plan", bundle)
                n += 100
            rate = n / (time.perf_counter() - t0)
            log.close()
        print(f"{'  fsync ' + policy:<34} {rate:>10,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
