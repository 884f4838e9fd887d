"""Run the HA simulator: one schedule with its trace, or a range of seeds with the figures.

    python -m tests.sim.run --seed 1234 [--trace]      # replay one schedule (`make sim SEED=1234`)
    python -m tests.sim.run --schedules 1000000 --start 0 --workers 2   # `make sim-long`

A range prints schedules per second, the faults injected by kind, the invariant checks made
and the violations met, by known path (`tests.sim.known`); a violation of no known path is
printed with its seed and makes the exit status 1. Ranges are resumable: `--start` is the
first seed, and every seed's schedule is the same on every run.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

from tests.sim.known import classify
from tests.sim.scenario import Sim


@dataclass
class Tally:
    schedules: int = 0
    unjudged: int = 0  # every copy of an acknowledged record destroyed: not judged
    foreign: int = 0  # a foreign client's bundle processed twice outside its contract (`tests.sim.known`)
    steps: int = 0
    checks: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    known: Counter[str] = field(default_factory=Counter)
    unknown: list[tuple[int, str]] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        self.schedules += other.schedules
        self.unjudged += other.unjudged
        self.foreign += other.foreign
        self.steps += other.steps
        self.checks += other.checks
        self.faults.update(other.faults)
        self.known.update(other.known)
        self.unknown.extend(other.unknown)


def run_range(start: int, stop: int) -> Tally:
    logging.getLogger("ha").setLevel(logging.ERROR)  # a schedule's warnings are its trace's business
    tally = Tally()
    for seed in range(start, stop):
        sim = Sim(seed)
        violations = sim.run()
        tally.schedules += 1
        tally.steps += sim.world.steps
        tally.checks += sim.checks
        tally.faults.update(sim.faults_seen)
        tally.unjudged += not sim.judged
        tally.foreign += bool(sim.outside_contract)
        if violations:
            path = classify(violations[0])
            if path is None:
                tally.unknown.append((seed, violations[0]))
            else:
                tally.known[path] += 1
    return tally


def run_many(start: int, count: int, workers: int, chunk: int = 500) -> Tally:
    """Seeds `start` to `start + count - 1`, over `workers` processes."""
    ranges = [(s, min(s + chunk, start + count)) for s in range(start, start + count, chunk)]
    total = Tally()
    if workers <= 1:
        for lo, hi in ranges:
            total.add(run_range(lo, hi))
        return total
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        for tally in pool.starmap(run_range, ranges):
            total.add(tally)
    return total


def report(tally: Tally, seconds: float) -> str:
    lines = [
        f"{tally.schedules} schedules in {seconds:.1f} s ({tally.schedules / max(seconds, 1e-9):.0f} schedules/s), "
        f"{tally.steps} steps, {tally.checks} invariant checks",
        "faults injected: " + ", ".join(f"{kind} {n}" for kind, n in sorted(tally.faults.items())),
    ]
    met = sum(tally.known.values()) + len(tally.unknown)
    lines.append(f"schedules with a violation: {met}")
    if tally.unjudged:
        lines.append(
            f"  ({tally.unjudged} schedules destroyed every copy of an acknowledged record, with fsync off "
            "or wiped disks on every member: their end is an operator's call, not judged)"
        )
    if tally.foreign:
        lines.append(
            f"  ({tally.foreign} schedules repeated a foreign client's bundle outside its contract: "
            "resent while an earlier attempt was still in a member, or past the digest's memory)"
        )
    for path, n in tally.known.most_common():
        lines.append(f"  {n:6d}  known, open: {path}")
    for seed, text in tally.unknown[:20]:
        lines.append(f"  NEW  seed {seed}: {text}")
    return "\n".join(lines)


def replay(seed: int, trace: bool) -> int:
    sim = Sim(seed, trace=trace)
    violations = sim.run()
    print(f"seed {seed}: {sim.config}")
    if trace:
        print("\n".join(sim.world.lines))
    for line in violations:
        print(f"VIOLATION {line}" + (f"  [known: {classify(line)}]" if classify(line) else ""))
    print("passed" if not violations else f"{len(violations)} violations")
    return 1 if violations else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, help="replay this one schedule")
    parser.add_argument("--trace", action="store_true", help="print what happened, step by step")
    parser.add_argument("--schedules", type=int, default=1000)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    if args.seed is not None:
        return replay(args.seed, args.trace)
    started = time.monotonic()
    tally = run_many(args.start, args.schedules, args.workers)
    print(report(tally, time.monotonic() - started))
    return 1 if tally.unknown else 0


if __name__ == "__main__":
    sys.exit(main())
