"""The rooms plan of the crash and failover tests: a stateful plan (a partition of length
windows, a pattern with `every`/`within`, a table read in a join and updated, a time batch),
its registry document, seeded readings, what an uninterrupted run emits, and a Thrift feeder."""

from __future__ import annotations

import os
import random
import time
from collections import Counter, defaultdict, deque
from pathlib import Path

import sqlalchemy as sa

import engine
from adapters.thrift import DataBridgeClient
from adapters.thrift.definitions import parse_definition
from adapters.thrift.events import WireEvent
from tests.support.nodes import ADMIN_PASSWORD, NodeProcess

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
BUNDLE = int(
    os.environ.get("CEPHEUS_ROOMS_BUNDLE", "8")
)  # readings a bundle (`make outage` and `outage-long`: 32, for 5,000 rows/s or more)
STEP_MS = 250  # event time between readings; `within 1 sec` spans four of them
Reading = tuple[str, int, int]
Row = tuple[str, str, int, int, int]


def readings(seed: int, n: int = READINGS) -> list[Reading]:
    rng = random.Random(seed)
    return [(f"r{rng.randrange(4)}", seq, rng.randrange(100)) for seq in range(n)]


def uninterrupted(plan_input: list[Reading], base: int) -> list[Row]:
    """What the plan emits for these readings in one uninterrupted run (event time), sent in
    the bundles the node gets (a bundle is one chunk: the join sees the table as it was before
    the bundle, and a partition's window emits a row per run of one room's readings in it).
    Anchored: the run must equal the rows computed by hand (`by_hand`), so a fault test that
    compares a sink with it cannot pass on a reference that lost rows the way the sink did."""
    runtime = engine.compile(PLAN)
    rows: list[Row] = []
    runtime.subscribe("Out", lambda events: rows.extend(tuple(e.data) for e in events))  # type: ignore[misc]
    for start in range(0, len(plan_input), BUNDLE):
        bundle = plan_input[start : start + BUNDLE]
        runtime.send("In", bundle, timestamps=[base + r[1] * STEP_MS for r in bundle])
    rows = [r for r in rows if r[0] != "batch"]  # time batches follow the wall clock: checked apart
    hand = by_hand(plan_input, base)
    assert Counter(rows) == Counter(hand), (
        f"the reference run differs from the rows computed by hand: engine only {Counter(rows) - Counter(hand)}, "
        f"by hand only {Counter(hand) - Counter(rows)}"
    )
    return rows


def by_hand(plan_input: list[Reading], base: int) -> list[Row]:
    """The rows of `windowed`, `rises` and `changes` for these readings, computed with plain
    loops and no engine, bundle by bundle as the node gets them."""
    rows: list[Row] = []
    windows: dict[str, deque[int]] = defaultdict(lambda: deque(maxlen=3))
    latest: dict[str, int] = {}
    waiting: list[tuple[str, int, int, int]] = []  # rises' e1: room, seq, v, event time
    for start in range(0, len(plan_input), BUNDLE):
        bundle = plan_input[start : start + BUNDLE]
        for i, (room, seq, v) in enumerate(bundle):
            windows[room].append(v)
            if i + 1 == len(bundle) or bundle[i + 1][0] != room:  # the end of a run of one room
                rows.append(("window", room, seq, sum(windows[room]), len(windows[room])))
        for room, seq, v in bundle:
            at = base + seq * STEP_MS
            still = []
            for e1 in waiting:
                if at - e1[3] > 1000:  # `within 1 sec`: it expired
                    continue
                if e1[0] == room and v > e1[2]:
                    rows.append(("rise", room, seq, e1[1], v - e1[2]))
                else:
                    still.append(e1)
            waiting = [*still, (room, seq, v, at)]  # `every`: each reading starts a match
        rows.extend(
            ("change", room, seq, latest[room], v - latest[room]) for room, seq, v in bundle if room in latest
        )
        latest.update((room, v) for room, _, v in bundle)  # `latest` runs after `changes`, per bundle
    return rows


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
            f"tcp://{node.host}:{node.thrift_port}",
            f"ssl://{node.host}:{node.tls_port}",
            username="admin",
            password=ADMIN_PASSWORD,
            bundle_size=BUNDLE,
            ca_file=str(node.certificate),
        )
        self.client.add_definition(parse_definition(DEFINITION))
        self.client.connect()

    def send(self, batch: list[Reading], pause: float = 0.02) -> None:
        for start in range(0, len(batch), BUNDLE):
            bundle = batch[start : start + BUNDLE]
            self.client.publish(
                [WireEvent("readings:1.0.0", self.base + r[1] * STEP_MS, payload=r) for r in bundle]
            )  # returns once the node acknowledged the bundle
            time.sleep(pause)  # a few time batches close while the readings arrive

    def close(self) -> None:
        self.client.close()


def provision(
    node: NodeProcess,
    tmp: Path,
    sink: str,
    *,
    redundant: str | None = None,
    buffer_events: int = 0,
    batch_events: int = 7,
    forward_to: NodeProcess | None = None,
    chained: bool = False,
) -> None:
    """The plan, its streams and its sink in the registry of `node` (`redundant`: on every member
    of a cluster, one notifying, in that `ha_mode`; `buffer_events`: the sink adapter's, when not
    the node's default; `batch_events`: the rows of one sink transaction (7 cuts batches often,
    for the fault tests; a sink taking 5,000 rows/s needs larger ones); `forward_to`: instead of a sink, the outputs go over Thrift to that
    node, a `Downstream`, which writes them to `sink`; `chained`: a second plan, `landing`,
    redundant too, takes the rooms plan's outputs and passes them on to the sink)."""
    document = DOCUMENT.replace("SINK", sink)
    if chained:
        document = landing_document(document, redundant)
        (tmp / "landing.siddhi").write_text(LANDING, encoding="utf-8")
    if forward_to is not None:
        document = document[: document.index("[[datasources]]")] + forwarding(forward_to)
    document = document.replace("batch_events = 7", f"batch_events = {batch_events}")
    if buffer_events:
        document = document.replace(
            f"batch_events = {batch_events}",
            f"batch_events = {batch_events}\nbuffer_events = {buffer_events}",
        )
    if redundant:
        document = document.replace(
            'file = "rooms.siddhi"',
            f'file = "rooms.siddhi"\ndistributed_mode = "redundant"\nha_mode = "{redundant}"',
        )
    (tmp / "rooms.siddhi").write_text(PLAN, encoding="utf-8")
    (tmp / "apply.toml").write_text(document, encoding="utf-8")
    node.cli("db", "upgrade")
    node.cli("apply", str(tmp / "apply.toml"))


def forwarding(node: NodeProcess) -> str:
    """The rooms plan's outputs to `node` through the wso2event adapter."""
    return f"""
[[adapters]]
name = "toDownstream"
type = "wso2event"
receiverURL = "tcp://{node.host}:{node.thrift_port}"
authenticatorURL = "ssl://{node.host}:{node.tls_port}"
ca_file = "{node.certificate}"
username = "admin"
password = "{ADMIN_PASSWORD}"
retry_initial_ms = 20
retry_max_ms = 500

[[formatters]]
name = "outEvents"
stream = "outs:1.0.0"
adapter = "toDownstream"
type = "wso2event"
"""


LANDING = """
@app:name('landing')
@Import('outs:1.0.0') define stream Outs (kind string, room string, seq long, a long, b long);
@Export('landed:1.0.0') define stream Landed (kind string, room string, seq long, a long, b long);
from Outs select * insert into Landed;
"""


def landing_document(document: str, redundant: str | None = None) -> str:
    """`document` with the `landing` plan after the rooms plan (or instead of it, when the rooms
    plan is not in it), feeding the sink with what it lands."""
    landing = '[[plans]]\nname = "landing"\nfile = "landing.siddhi"\n'
    if redundant:
        landing += f'distributed_mode = "redundant"\nha_mode = "{redundant}"\n'
    document = document.replace(
        "[[datasources]]",
        '[[streams]]\nname = "landed"\npayload = [\n'
        '  { name = "kind", type = "STRING" }, { name = "room", type = "STRING" }, { name = "seq", type = "LONG" },\n'
        f'  {{ name = "a", type = "LONG" }}, {{ name = "b", type = "LONG" }},\n]\n\n{landing}\n[[datasources]]',
    )
    return document.replace(
        'stream = "outs:1.0.0"\nadapter = "outTable"', 'stream = "landed:1.0.0"\nadapter = "outTable"'
    )


class Downstream:
    """A node of its own (registry `registry`) whose plan writes every `outs` event it receives
    over Thrift to the rooms sink table in `sink`, as the last hop of a forwarding chain."""

    def __init__(self, tmp: Path, registry: str, sink: str) -> None:
        tmp.mkdir()
        self.node = NodeProcess(tmp, registry)
        document = DOCUMENT.replace("SINK", sink)
        rooms = document.index("[[plans]]")
        document = landing_document(document[:rooms] + document[document.index("[[datasources]]") :])
        assert "rooms.siddhi" not in document and "landed:1.0.0" in document
        (tmp / "landing.siddhi").write_text(LANDING, encoding="utf-8")
        (tmp / "apply.toml").write_text(document, encoding="utf-8")
        self.node.cli("db", "upgrade")
        self.node.cli("apply", str(tmp / "apply.toml"))

    def received(self) -> int:
        """Events the node received on `outs`, those sent again included (-1: it did not say)."""
        try:
            return int(self.node.health()["received"].get("outs:1.0.0", 0))
        except (OSError, KeyError, TypeError, ValueError, AttributeError):
            return -1


def assert_exact(
    sink: str, plan_input: list[Reading], base: int, where: str, ignore: tuple[str, ...] = ()
) -> None:
    """The sink holds exactly what one uninterrupted run emits for `plan_input`: no row missing,
    none twice, and the time batches counted every reading once. Rows of the kinds in `ignore`
    (a query added by an edit) are not compared."""
    expected = uninterrupted(plan_input, base)
    table = [r for r in sink_rows(sink) if r[0] not in ignore]
    got = [r for r in table if r[0] != "batch"]
    missing = Counter(expected) - Counter(got)
    repeated = Counter(got) - Counter(expected)
    assert not missing and not repeated, (
        f"{where}: rows of readings {sorted({r[2] for r in missing})} missing {missing}, "
        f"of readings {sorted({r[2] for r in repeated})} repeated {repeated}"
    )
    batches = [r for r in table if r[0] == "batch"]
    counted = sum(r[3] for r in batches)
    assert counted == len(plan_input), (
        f"{where}: time batches counted {counted} of {len(plan_input)} readings"
    )
    assert sum(r[4] for r in batches) == sum(r[2] for r in plan_input), where
