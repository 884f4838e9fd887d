"""A node killed with SIGKILL at a random point: real `cepheus server` processes, a MariaDB
registry and a MariaDB sink table, compared with an uninterrupted run of the same plan.

A stateful plan (a partition of length windows, a pattern with `every`/`within`, a table read
in a join and updated, a time batch) gets readings over Thrift. A snapshot is taken on request
part way; later the node is killed (-9) right after a bundle was acknowledged, while its
adapter may be in the middle of a write. A node then starts on the same registry and the rest
of the readings go to it.
- Input log on (the same node restarts): the sink table equals the uninterrupted run's
  outputs exactly, no row missing, none twice; the time batches count every reading once.
- Input log off (another node takes over from the snapshot): the readings acknowledged
  between the snapshot and the kill are the only loss, and the test says how many.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.databases import isolated_database
from tests.support.nodes import ADMIN_PASSWORD, NodeProcess, toml_config, wait_for
from tests.support.rooms import (
    BUNDLE,
    READINGS,
    Feeder,
    Reading,
    Row,
    batch_count,
    provision,
    readings,
    sink_rows,
    uninterrupted,
)

pytestmark = [pytest.mark.mysql, pytest.mark.slow]


@pytest.fixture
def registry(mysql_url: str) -> Iterator[str]:
    with isolated_database(mysql_url, "cep_crash") as url:
        yield url


@pytest.fixture
def sink(mysql_url: str) -> Iterator[str]:
    with isolated_database(mysql_url, "cep_sink") as url:
        yield url


@pytest.fixture
def nodes() -> Iterator[Callable[..., NodeProcess]]:
    made: list[NodeProcess] = []

    def make(tmp: Path, registry: str, input_log: bool) -> NodeProcess:
        tmp.mkdir(exist_ok=True)
        node = NodeProcess(tmp, registry)
        node.sections["persistence"] = {"input_log": input_log}
        node.config_path.write_text(toml_config(node.sections), encoding="utf-8")
        made.append(node)
        return node

    yield make
    for node in made:
        node.stop()


def crash_run(
    tmp_path: Path,
    registry: str,
    sink: str,
    nodes: Callable[..., NodeProcess],
    *,
    input_log: bool,
    seed: int,
) -> tuple[list[Reading], int, int, int, list[Row]]:
    """Feed, snapshot at `snap`, kill -9 after `kill`, restart (the same node with the log,
    another without), feed the rest; (readings, base, snap, kill, the sink table)."""
    rng = random.Random(seed)
    plan_input = readings(seed)
    snap = rng.randrange(10, READINGS // 2) // BUNDLE * BUNDLE
    kill = rng.randrange(snap + BUNDLE, READINGS - 40) // BUNDLE * BUNDLE
    base = int(time.time() * 1000) + 86_400_000  # event time ahead of the wall clock: see `uninterrupted`
    first = nodes(tmp_path / "a", registry, input_log)
    provision(first, tmp_path, sink)
    first.start()
    feeder = Feeder(first, base)
    feeder.send(plan_input[:snap])
    first.cli("snapshot", "take", "rooms", env={"CEPHEUS_PASSWORD": ADMIN_PASSWORD})
    feeder.send(plan_input[snap:kill])
    if not input_log:  # without the log, outputs still in the adapter's buffer would be lost too
        delivered = len(uninterrupted(plan_input[:kill], base))
        wait_for(lambda: len([r for r in sink_rows(sink) if r[0] != "batch"]) >= delivered, 20, "delivery")
    first.kill()  # right after an acknowledgement: the adapter may be in the middle of a write
    feeder.close()
    second = first if input_log else nodes(tmp_path / "b", registry, input_log)
    second.start()
    feeder = Feeder(second, base)
    feeder.send(plan_input[kill:])
    feeder.close()
    if input_log:  # the last time batch closes 300 ms after it opened: wait for it
        wait_for(lambda: batch_count(sink) >= READINGS, 20, f"every reading in a time batch\n{second.log()}")
    assert second.stop() == 0  # graceful: the adapter delivers everything before the exit
    return plan_input, base, snap, kill, sink_rows(sink)


def test_with_the_input_log_a_kill_9_loses_and_repeats_nothing(
    tmp_path: Path, registry: str, sink: str, nodes: Callable[..., NodeProcess]
) -> None:
    seed = random.randrange(1 << 30)
    plan_input, base, snap, kill, table = crash_run(
        tmp_path, registry, sink, nodes, input_log=True, seed=seed
    )
    where = f"seed {seed}: snapshot after {snap} readings, kill -9 after {kill}"
    expected = uninterrupted(plan_input, base)
    got = [r for r in table if r[0] != "batch"]
    missing = Counter(expected) - Counter(got)
    repeated = Counter(got) - Counter(expected)
    assert not missing and not repeated, f"{where}: missing {missing}, repeated {repeated}"
    batches = [r for r in table if r[0] == "batch"]
    assert sum(r[3] for r in batches) == READINGS, f"{where}: time batches counted {batches}"
    assert sum(r[4] for r in batches) == sum(r[2] for r in plan_input), where
    log = (tmp_path / "a" / "server.log").read_text(encoding="utf-8")
    assert "replayed" in log and "input log records" in log, log[-3000:]


def test_without_the_input_log_the_readings_after_the_snapshot_are_the_only_loss(
    tmp_path: Path,
    registry: str,
    sink: str,
    nodes: Callable[..., NodeProcess],
    capsys: pytest.CaptureFixture[str],
) -> None:
    seed = random.randrange(1 << 30)
    plan_input, base, snap, kill, table = crash_run(
        tmp_path, registry, sink, nodes, input_log=False, seed=seed
    )
    where = f"seed {seed}: snapshot after {snap} readings, kill -9 after {kill}"
    # before the kill the first node delivered everything up to `kill`; the node that took over
    # carried on from the snapshot, as if readings snap..kill had never arrived
    before_kill = uninterrupted(plan_input[:kill], base)
    lost = plan_input[snap:kill]
    after = uninterrupted(plan_input[:snap] + plan_input[kill:], base)[
        len(uninterrupted(plan_input[:snap], base)) :
    ]
    expected = before_kill + after
    got = [r for r in table if r[0] != "batch"]
    missing = Counter(expected) - Counter(got)
    repeated = Counter(got) - Counter(expected)
    assert not missing and not repeated, f"{where}: missing {missing}, repeated {repeated}"
    with capsys.disabled():
        print(f"\n[input log off] {where}: {len(lost)} acknowledged readings lost (those after the snapshot)")
