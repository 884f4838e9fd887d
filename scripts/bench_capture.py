"""How long `Runtime.capture()` holds the runtime's lock, against the whole snapshot
(capture and encode), for partitions of many keys each holding a small window or a
partial pattern match.

    .venv/bin/python scripts/bench_capture.py [--keys 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import time

import engine

PLANS = {
    "length window": (
        "define stream S (k string, v double); partition with (k of S) begin "
        "from S#window.length(5) select k, sum(v) as t insert into O; end;",
        False,
    ),
    "length, fused": (
        "define stream S (k string, v double); partition with (k of S) begin "
        "from S#window.length(5) select k, sum(v) as t insert into O; end;",
        True,
    ),
    "time window": (
        "define stream S (k string, v double); partition with (k of S) begin "
        "from S#window.time(1 hour) select k, avg(v) as t insert into O; end;",
        True,
    ),
    "pattern, per key": (
        "define stream S (k string, v double); partition with (k of S) begin "
        "from every e1=S[v > 0] -> e2=S[v > e1.v * 100] within 1 hour "
        "select e1.k, e2.v insert into O; end;",
        False,
    ),
    "pattern, fused": (
        "define stream S (k string, v double); partition with (k of S) begin "
        "from every e1=S[v > 0] -> e2=S[v > e1.v * 100] within 1 hour "
        "select e1.k, e2.v insert into O; end;",
        True,
    ),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'workload':<18} {'capture (lock) ms':>18} {'encode ms':>10} {'snapshot ms':>12} {'bytes':>10}")
    for name, (plan, fuse) in PLANS.items():
        rt = engine.compile(plan, start_time=1000, fuse_partitions=fuse)
        rows = [(f"k{i}", float(j + 1)) for j in range(3) for i in range(args.keys)]
        rt.send("S", rows, 1000)
        captures, encodes, snapshots = [], [], []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            cap = rt.capture()
            t1 = time.perf_counter()
            blob = cap.encode()
            t2 = time.perf_counter()
            rt.snapshot()
            t3 = time.perf_counter()
            captures.append(t1 - t0)
            encodes.append(t2 - t1)
            snapshots.append(t3 - t2)
        print(
            f"{name:<18} {1000 * min(captures):>8.1f} (max {1000 * max(captures):>5.1f})"
            f" {1000 * min(encodes):>10.1f} {1000 * min(snapshots):>12.1f} {len(blob):>10}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
