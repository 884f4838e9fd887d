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
import sqlalchemy as sa

import engine
from adapters.thrift import DataBridgeClient
from adapters.thrift.definitions import parse_definition
from adapters.thrift.events import WireEvent
from tests.support.databases import isolated_database
from tests.support.nodes import ADMIN_PASSWORD, NodeProcess, toml_config, wait_for

pytestmark = [pytest.mark.mysql, pytest.mark.slow]

PLAN = """
@app:name('rooms')
@Import('readings:1.0.0') define stream In (room string, seq long, v long);
@Export('outs:1.0.0') define stream Out (kind string, room string, seq long, a long, b long);
define table Latest (room string, v long);

partition with (room of In)
begin
    @info(name='windowed')
    from In#window.length(3) select 'window' as kind, room, seq, sum(v) as a, count() as b insert into Out;
end;

@info(name='rises')
from every e1=In -> e2=In[room == e1.room and v > e1.v] within 1 sec
select 'rise' as kind, e1.room as room, e2.seq as seq, e1.seq as a, e2.v - e1.v as b insert into Out;

@info(name='changes')
from In join Latest on In.room == Latest.room
select 'change' as kind, In.room as room, In.seq as seq, Latest.v as a, In.v - Latest.v as b insert into Out;

@info(name='latest')
from In select room, v update or insert into Latest on Latest.room == room;

@info(name='batches')
from In#window.timeBatch(300 millisec)
select 'batch' as kind, '' as room, max(seq) as seq, count() as a, sum(v) as b insert into Out;
"""

DOCUMENT = """
[[streams]]
name = "readings"
payload = [{ name = "room", type = "STRING" }, { name = "seq", type = "LONG" }, { name = "v", type = "LONG" }]

[[streams]]
name = "outs"
payload = [
  { name = "kind", type = "STRING" }, { name = "room", type = "STRING" }, { name = "seq", type = "LONG" },
  { name = "a", type = "LONG" }, { name = "b", type = "LONG" },
]

[[plans]]
name = "rooms"
file = "rooms.siddhi"
snapshot_interval_minutes = 60

[[datasources]]
name = "sink"
url = "SINK"

[[adapters]]
name = "outTable"
type = "rdbms"
datasource = "sink"
table = "outs"
mode = "insert"
create_table = true
batch_events = 7
columns = [
  { name = "kind", type = "VARCHAR(10)" }, { name = "room", type = "VARCHAR(10)" },
  { name = "seq", type = "BIGINT" }, { name = "a", type = "BIGINT" }, { name = "b", type = "BIGINT" },
]

[[formatters]]
name = "outRows"
stream = "outs:1.0.0"
adapter = "outTable"
type = "map"
"""

DEFINITION = (
    '{"name": "readings", "version": "1.0.0", "payloadData": [{"name": "room", "type": "STRING"}, '
    '{"name": "seq", "type": "LONG"}, {"name": "v", "type": "LONG"}]}'
)
READINGS = 480
BUNDLE = 8
STEP_MS = 250  # event time between readings; `within 1 sec` spans four of them
Reading = tuple[str, int, int]
Row = tuple[str, str, int, int, int]


def readings(seed: int) -> list[Reading]:
    rng = random.Random(seed)
    return [(f"r{rng.randrange(4)}", seq, rng.randrange(100)) for seq in range(READINGS)]


def uninterrupted(plan_input: list[Reading], base: int) -> list[Row]:
    """What the plan emits for these readings in one uninterrupted run (event time), sent in
    the bundles the node gets (a bundle is one chunk: the join sees the table as it was before
    the bundle, and the aggregates emit a row per key and bundle)."""
    runtime = engine.compile(PLAN)
    rows: list[Row] = []
    runtime.subscribe("Out", lambda events: rows.extend(tuple(e.data) for e in events))  # type: ignore[misc]
    for start in range(0, len(plan_input), BUNDLE):
        bundle = plan_input[start : start + BUNDLE]
        runtime.send("In", bundle, timestamps=[base + r[1] * STEP_MS for r in bundle])
    return [r for r in rows if r[0] != "batch"]  # time batches follow the wall clock: checked apart


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


def sink_rows(url: str) -> list[Row]:
    db = sa.create_engine(url)
    try:
        with db.connect() as conn:
            if not sa.inspect(conn).has_table("outs"):
                return []
            result = conn.execute(sa.text("SELECT kind, room, seq, a, b FROM outs"))
            return [(r[0], r[1], int(r[2]), int(r[3]), int(r[4])) for r in result]
    finally:
        db.dispose()


def batch_count(url: str) -> int:
    return sum(r[3] for r in sink_rows(url) if r[0] == "batch")


class Feeder:
    """Sends readings to a node over Thrift in bundles, each acknowledged before the next."""

    def __init__(self, node: NodeProcess, base: int) -> None:
        self.base = base
        self.client = DataBridgeClient(
            f"tcp://127.0.0.1:{node.thrift_port}",
            f"ssl://127.0.0.1:{node.tls_port}",
            username="admin",
            password=ADMIN_PASSWORD,
            bundle_size=BUNDLE,
            ca_file=str(node.certificate),
        )
        self.client.add_definition(parse_definition(DEFINITION))
        self.client.connect()

    def send(self, batch: list[Reading]) -> None:
        for start in range(0, len(batch), BUNDLE):
            bundle = batch[start : start + BUNDLE]
            self.client.publish(
                [WireEvent("readings:1.0.0", self.base + r[1] * STEP_MS, payload=r) for r in bundle]
            )  # returns once the node acknowledged the bundle
            time.sleep(0.02)  # a few time batches close while the readings arrive

    def close(self) -> None:
        self.client.close()


def provision(node: NodeProcess, tmp: Path, sink: str) -> None:
    (tmp / "rooms.siddhi").write_text(PLAN, encoding="utf-8")
    (tmp / "apply.toml").write_text(DOCUMENT.replace("SINK", sink), encoding="utf-8")
    node.cli("db", "upgrade")
    node.cli("apply", str(tmp / "apply.toml"))


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
