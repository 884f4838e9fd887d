"""Micro-benchmark: publish → buffer → `_write` with `keep_new`, per bundle of output records.

    python scripts/bench_origins.py [--bundles 2000] [--size 500] [--rounds 5]

A buffered adapter whose `_write` does what the RDBMS adapter does with origins short of
the database (`keep_new` against the marks it keeps) takes `--bundles` bundles of
`--size` map-formatter rows: without origins (plain mode), with one `Origin` per bundle (a
run: how the node publishes a persistence-mode plan's outputs) and with one `Origin` per
record (the older form, still accepted: folded into runs at publish). Prints µs of CPU per
bundle, median (min–max) of `--rounds`: publishing with the writer stopped (the collector
off: a million buffered tuples would make its passes the main cost), the writer draining
that buffer, and both at once with the writer draining as records arrive (the collector on).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from typing import Any

from adapters.output import BufferedAdapter, Buffering, Fence, Origin, Run
from adapters.output.rdbms.delivered import keep_new

SOURCE = "benchFilter/benchHot:1.0.0/benchMap"
FORMS = ("plain", "run", "per record")


class Target(BufferedAdapter):
    kind = "bench"

    def __init__(self, buffer: int) -> None:
        super().__init__("bench", Buffering(buffer_events=buffer, batch_events=500, linger_ms=0))
        self.marks: dict[str, Origin] = {}

    def _write(self, records: list[Any], fence: Fence | None, origins: list[Run]) -> int:
        if all(origin is None for origin, _ in origins):
            return 0
        kept, self.marks = keep_new(records, origins, self.marks)
        return len(records) - len(kept)


def publish(out: Target, form: str, records: list[dict[str, Any]], position: int) -> None:
    if form == "plain":
        out.publish(records)
    elif form == "run":
        out.publish(records, None, Origin(SOURCE, "log-1", position, 0))
    else:
        out.publish(records, None, [Origin(SOURCE, "log-1", position, i) for i in range(len(records))])


def apart(form: str, bundles: int, records: list[dict[str, Any]]) -> tuple[float, float]:
    out = Target(bundles * len(records) + 1)
    gc.collect()
    gc.disable()
    try:
        t0 = time.process_time()
        for p in range(bundles):
            publish(out, form, records, p)
        t1 = time.process_time()
        out.start()
        assert out.flush(timeout=300)
        t2 = time.process_time()
    finally:
        gc.enable()
    out.stop(timeout=5)
    assert out.stats.written == bundles * len(records)
    return (t1 - t0) / bundles * 1e6, (t2 - t1) / bundles * 1e6


def together(form: str, bundles: int, records: list[dict[str, Any]]) -> float:
    out = Target(100_000)
    out.start()
    gc.collect()
    t0 = time.process_time()
    for p in range(bundles):
        publish(out, form, records, p)
        if p % 20 == 19:
            out.flush(timeout=60)
    assert out.flush(timeout=300)
    t1 = time.process_time()
    out.stop(timeout=5)
    return (t1 - t0) / bundles * 1e6


def shown(xs: list[float]) -> str:
    return f"{statistics.median(xs):7.1f} ({min(xs):.1f}–{max(xs):.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundles", type=int, default=2000)
    parser.add_argument("--size", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    records = [{"id": i, "sensor": f"s{i % 7}", "value": 90.0 + i % 10} for i in range(args.size)]
    runs: dict[str, list[tuple[float, float, float]]] = {form: [] for form in FORMS}
    for _ in range(args.rounds):
        for form in FORMS:
            runs[form].append((*apart(form, args.bundles, records), together(form, args.bundles, records)))
    print(f"µs of CPU per bundle of {args.size} records, median (min–max) of {args.rounds} rounds")
    print(f"{'origins':12} {'publish':>22} {'writer':>22} {'together':>22}")
    for form in FORMS:
        columns = [shown([r[k] for r in runs[form]]) for k in range(3)]
        print(f"{form:12} {columns[0]:>22} {columns[1]:>22} {columns[2]:>22}")


if __name__ == "__main__":
    main()
