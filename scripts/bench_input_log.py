"""Input log throughput: events/s appended per fsync policy, and events/s read back.

    python scripts/bench_input_log.py [--bundles N] [--always-bundles N] [--dir DIR]

Appends bundles of 100 events of 4 columns (long, double, string, bool) from one thread (and,
for "always", from 4 threads, whose waits share flushes) into a fresh log per policy, closes it (the close's flush is timed too), then reads the "interval" log
back with decoding. "always" flushes the disk once per bundle, so it runs fewer bundles. The
directory defaults to a temporary one under the data dir's file system, `var/`.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.persistence.input_log import Events, InputLog  # noqa: E402

EVENTS_PER_BUNDLE = 100


def bundles(n: int) -> list[Events]:
    out = []
    for b in range(n):
        base = b * EVENTS_PER_BUNDLE
        rows = [(base + i, (base + i) * 0.25, f"sym{i % 37}", i % 2 == 0) for i in range(EVENTS_PER_BUNDLE)]
        out.append(Events("Trades", [1_000 + base + i for i in range(EVENTS_PER_BUNDLE)], rows))
    return out


def append_rate(root: Path, policy: str, data: list[Events], threads: int = 1) -> tuple[float, int]:
    t0 = time.perf_counter()
    with InputLog(root, policy) as log:
        workers = [
            threading.Thread(target=lambda part=data[t::threads]: [log.append("bench", r) for r in part])
            for t in range(threads)
        ]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        size = log.sizes()["bench"]
    return len(data) * EVENTS_PER_BUNDLE / (time.perf_counter() - t0), size


def read_rate(root: Path) -> float:
    with InputLog(root, "off") as log:
        t0 = time.perf_counter()
        n = sum(len(r.rows) for _, r in log.read("bench") if isinstance(r, Events))
        return n / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bundles", type=int, default=5_000)
    parser.add_argument("--always-bundles", type=int, default=500)
    parser.add_argument("--dir", type=Path, default=Path("var"))
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    data = bundles(args.bundles)
    base = Path(tempfile.mkdtemp(prefix="bench-input-log-", dir=args.dir))
    try:
        print(f"{'what':<18} {'events':>9} {'events/s':>12} {'MB':>8}")
        for policy, threads in (("off", 1), ("interval", 1), ("always", 1), ("always", 4)):
            run = data[: args.always_bundles] if policy == "always" else data
            rate, size = append_rate(base / f"{policy}{threads}", policy, run, threads)
            events = len(run) * EVENTS_PER_BUNDLE
            what = f"append {policy}" + (f" x{threads}" if threads > 1 else "")
            print(f"{what:<18} {events:>9} {rate:>12,.0f} {size / 1e6:>8.1f}")
        rate = read_rate(base / "interval1")
        print(f"{'read (decoded)':<18} {len(data) * EVENTS_PER_BUNDLE:>9} {rate:>12,.0f}")
    finally:
        shutil.rmtree(base)


if __name__ == "__main__":
    main()
