"""End-to-end node benchmark: publisher → Thrift → filter plan → RDBMS adapter → database.

    python scripts/bench_node.py [--events 1000000] [--rate 10000] [--seconds 10]
                                 [--output mysql+pymysql://root@127.0.0.1:3306/test]
                                 [--persistence none|nolog|off|interval|always]
                                 [--redundant failover|active-active|full-active-active]
                                 [--members 2|3] [--cluster-tls [on|compare]]

Starts a real `cepheus server` process (SQLite registry in a temporary directory), applies a
filter plan whose matches (10 % of the events) an RDBMS adapter inserts into a fresh table of
the `--output` database, then publishes from this process over real sockets:

1. throughput: `--events` events as fast as one connection takes them; events/s until the
   last bundle is acknowledged (every event has then passed the plan) and until the last
   matching row is in the database;
2. latency: `--rate` events/s for `--seconds` s, in bundles every 10 ms. An event's latency is
   from the moment its bundle was sent (the event timestamp) to the database's clock when
   the row was inserted (a column default), so it covers the whole path including the
   adapter's batching and the commit.

`--persistence` puts the plan in persistence mode (a snapshot interval of an hour, so none is
taken during the run): `nolog` without the input log, `off`/`interval`/`always` with it and that
fsync policy (the node's default is `interval`); `none` (the default) is a plain plan.

Prints one table; exits 1 when a row is missing.

`--redundant MODE` measures, in one run and with the same plan and the same events, a single
node (as above) and then the plan made redundant (`distributed_mode = "redundant"`,
`ha_mode = MODE`) on `--members` (2 or 3) `cepheus server` members forming a cluster on
127.0.0.1 (`[cluster]` host, wka, advertise, secret) and sharing one registry. It needs
`--output` on MariaDB/MySQL or PostgreSQL: the members' registry and the sink of both runs are
databases (PostgreSQL: schemas) of their own made on that server (`cep_bench_reg_*`,
`cep_bench_sink_*`) and dropped at the end. Every phase starts once a member notifies with
every other member in sync (`standbys_in_sync` in /health/details) and every member names it
the preferred notifier (else the plan moves to that one 5 s later, mid-phase), and ends once
the standbys hold the notifier's whole log and no member works any more. The publishers send
as WSO2's clients do in that mode: `failover` to the notifier (to the next member once a
bundle is refused or its connection fails), `active-active` round robin over the members,
`full-active-active` every bundle to every member at once (sent once all answered; the first
answer is timed too). The phases are the ones above, each on both: latency at `--rate`
(bundle sent → acknowledged, send → row committed), one connection (with its bundles' round
trips), `--connections` processes. One table gives per phase the events/s until acknowledged
and until committed with the ratio redundant/single, the latencies, the CPU seconds per
million events (utime + stime from /proc/<pid>/stat before and after the phase) of the
notifier (the single node), of each standby, of the database server (the processes listening
on `--output`'s port) and of this bench's publishers, the cores each kept busy until the rows
were committed, and the cores the whole machine was busy meanwhile (others' work included).
Under it, the plan's lease row in the registry before and after each phase (a required
position that follows the notifier's log means acknowledgements waited for confirming lease
renewals, `ha/acks.py` `Confirm`) and the events each member took from the publishers. A
redundant plan always logs its input (fsync as `--persistence` says; `interval` for none and
nolog): `--persistence interval` makes the single node pay for the log too. `--repeat N`
runs N such rounds (single, then redundant, fresh processes and databases each time), prints
the last round's table, then each round's ratio redundant/single of events/s until
acknowledged and the medians: one run's ratio swings by a quarter on two shared cores.

`--cluster-tls` (with `--redundant`) runs the members' cluster channel over mutual TLS
(docs/high-availability.md, "Encrypting the cluster channel"): the bench makes a throwaway
cluster CA and a certificate (TLS server and client, ECDSA P-256) and key per member in its
temporary directory and gives each member `[cluster] cert_file`, `key_file`, `ca_file`; before
measuring, it completes a TLS handshake with a member's cluster port (with another member's
certificate, verifying the port's against the CA) to prove the channel is encrypted. The
redundant column is then the plan over TLS. `--cluster-tls compare` runs the redundant plan
twice in the same run, each cluster with a registry of its own, first in clear, then over TLS,
and prints both columns beside the single node with the ratios plain/single, TLS/single and
TLS/plain: TLS's cost on the same plan and events on the same machine at the same time.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import json
import multiprocessing
import os
import random
import secrets
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Collection, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import sqlalchemy as sa
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from adapters.thrift import DataBridgeClient, WireEvent, parse_definition
from adapters.thrift.errors import ConnectionClosed, RemoteApplicationError, TransportError

REPO = Path(__file__).resolve().parents[1]
PASSWORD = "bench-" + secrets.token_hex(8)
DEFINITION = parse_definition(
    "{'name':'bench','version':'1.0.0','metaData':[{'name':'host','type':'STRING'}],"
    "'payloadData':[{'name':'id','type':'LONG'},{'name':'sensor','type':'STRING'},{'name':'value','type':'DOUBLE'}]}"
)
PLAN = """@Plan:name('benchFilter')
@Import('bench:1.0.0')
define stream bench (meta_host string, id long, sensor string, value double);
@Export('benchHot:1.0.0')
define stream benchHot (id long, sensor string, value double);
from bench[value >= 90.0] select id, sensor, value insert into benchHot;
"""
APPLY = """
[[streams]]
name = "bench"
meta = {{ host = "STRING" }}
payload = {{ id = "LONG", sensor = "STRING", value = "DOUBLE" }}

[[streams]]
name = "benchHot"
payload = {{ id = "LONG", sensor = "STRING", value = "DOUBLE" }}

[[plans]]
file = "plan.siddhi"
snapshot_interval_minutes = {interval}

[[datasources]]
name = "benchDB"
url = "{output}"

[[adapters]]
name = "benchTable"
type = "rdbms"
datasource = "benchDB"
table = "{table}"
mode = "insert"
batch_events = 1000

[[formatters]]
name = "benchRows"
stream = "benchHot:1.0.0"
adapter = "benchTable"
type = "map"
mappings = {{ id = "id", sensor = "sensor", value = "value" }}
timestamp_column = "sent_ms"
"""


def free_offset(avoid: Collection[int] = ()) -> int:
    """The first port offset under which WSO2's base ports (and the cluster port) are free;
    `avoid`: offsets already given to nodes not started yet. Offsets step by 11, so no base
    port of one offset is another base port of another."""
    for offset in range(300, 3000, 11):
        if offset in avoid:
            continue
        try:
            with ExitStack() as stack:
                for base in (9763, 7611, 7711, 4000):
                    s = stack.enter_context(socket.socket())
                    s.bind(("127.0.0.1", base + offset))
            return offset
        except OSError:
            continue
    raise SystemExit("no free port offset")


def create_table(engine: sa.Engine, table: str) -> str:
    """The output table with an insert-time column (ms since the epoch, by the database's clock)."""
    dialect = engine.dialect.name
    if dialect == "mysql":
        inserted = "inserted_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)"
        inserted_ms = "CAST(UNIX_TIMESTAMP(inserted_at) * 1000 AS SIGNED)"
    elif dialect == "postgresql":
        inserted = "inserted_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()"
        inserted_ms = "CAST(EXTRACT(EPOCH FROM inserted_at) * 1000 AS BIGINT)"
    elif dialect == "sqlite":
        inserted = "inserted_ms INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))"
        inserted_ms = "inserted_ms"
    else:
        raise SystemExit(f"--output: {dialect} is not supported here (mysql, postgresql, sqlite)")
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                f"CREATE TABLE {table} (id BIGINT NOT NULL, sensor VARCHAR(20), value DOUBLE PRECISION, "
                f"sent_ms BIGINT NOT NULL, {inserted})"
            )
        )
    return inserted_ms


def count_rows(engine: sa.Engine, table: str, where: str = "") -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.text(f"SELECT COUNT(*) FROM {table} {where}")).scalar_one())


def wait_rows(engine: sa.Engine, table: str, expected: int, timeout: float, where: str = "") -> float:
    deadline = time.monotonic() + timeout
    while True:
        have = count_rows(engine, table, where)
        if have >= expected:
            return time.perf_counter()
        if time.monotonic() > deadline:
            raise SystemExit(f"only {have} of {expected} rows arrived in {table} within {timeout} s")
        time.sleep(0.01)


def start_node(
    tmp: Path,
    offset: int,
    persistence: str,
    *,
    registry: str | None = None,
    node_id: str | None = None,
    cluster: dict[str, Any] | None = None,
) -> subprocess.Popen[bytes]:
    """`cepheus server` with its data and log in `tmp`; by default with a SQLite registry of its
    own. A cluster member gets the shared `registry`, its `node_id` and a `[cluster]` section."""
    config = tmp / "cepheus.toml"
    logged = persistence not in ("none", "nolog")
    fsync = persistence if logged else "interval"
    registry = registry or f"sqlite:///{tmp / 'registry.db'}"
    node = f"id = {json.dumps(node_id)}\n" if node_id else ""
    clustered = "".join(f"{k} = {json.dumps(v)}\n" for k, v in (cluster or {}).items())
    config.write_text(
        f'[node]\n{node}port_offset = {offset}\ndata_dir = "{tmp / "var"}"\nlog_level = "WARNING"\n'
        f"[registry]\nurl = {json.dumps(registry)}\npoll_seconds = 0.2\n"
        '[console]\nhost = "127.0.0.1"\n[thrift]\nhost = "127.0.0.1"\n'
        f'[persistence]\ninput_log = {"true" if logged else "false"}\nfsync = "{fsync}"\n'
        + (f"[cluster]\n{clustered}" if cluster else ""),
        encoding="utf-8",
    )
    env = {**os.environ, "CEPHEUS_ADMIN_PASSWORD": PASSWORD}
    log = (tmp / "server.log").open("wb")
    return subprocess.Popen(
        [sys.executable, "-m", "app.cli", "server", "--config", str(config)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=REPO,
    )


def wait_ready(process: subprocess.Popen[bytes], offset: int, tmp: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"cepheus server exited:\n{(tmp / 'server.log').read_text()}")
        try:
            url = f"http://127.0.0.1:{9763 + offset}/health/details"
            request = urllib.request.Request(url)
            token = base64.b64encode(f"admin:{PASSWORD}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
            with urllib.request.urlopen(request, timeout=1) as reply:  # noqa: S310 - local node
                health = json.loads(reply.read())
            if health["plans"].get("benchFilter", {}).get("state") == "running" and health["adapters"]:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit("the node did not deploy the bench plan within 60 s")


def node_cpu(pid: int) -> float:
    """CPU seconds (user + system, every thread, living or ended) process `pid` has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Publishing(Protocol):
    """What the phases publish through: one `DataBridgeClient`, or a `ClusterClient`."""

    def publish(self, events: Sequence[WireEvent]) -> None: ...


def make_events(n: int, seed: int = 7) -> list[tuple[Any, ...]]:
    rng = random.Random(seed)
    return [(i, f"sensor-{i % 50}", float(rng.randrange(1000)) / 10.0) for i in range(n)]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def throughput(client: Publishing, payloads: list[tuple[Any, ...]], bundle: int) -> float:
    meta = ("bench-host",)
    t0 = time.perf_counter()
    for start in range(0, len(payloads), bundle):
        now = time.time_ns() // 1_000_000
        client.publish(
            [WireEvent("bench:1.0.0", now, meta, None, p) for p in payloads[start : start + bundle]]
        )
    return t0


def _capacity_worker(
    port: int, ca_file: str, first_id: int, count: int, bundle: int, ready: Any, go: Any, done: Any
) -> None:
    client = DataBridgeClient(
        f"tcp://127.0.0.1:{port}",
        username="admin",
        password=PASSWORD,
        ca_file=ca_file,
        definitions=[DEFINITION],
    )
    with client:
        payloads = [(first_id + i, s, v) for i, (_, s, v) in enumerate(make_events(count, seed=first_id))]
        now = time.time_ns() // 1_000_000
        bundles = [
            client.encode(
                [WireEvent("bench:1.0.0", now, ("bench-host",), None, p) for p in payloads[k : k + bundle]]
            )
            for k in range(0, count, bundle)
        ]
        ready.put(sum(1 for _, _, v in payloads if v >= 90.0))
        go.wait()
        for data in bundles:
            client.send_encoded(data)
        done.put(time.perf_counter())


def capacity(
    port: int, ca_file: str, first_id: int, events: int, connections: int, bundle: int
) -> tuple[float, float, int]:
    """`connections` processes send pre-encoded bundles at once: (start, last ack, matching events)."""
    ctx = multiprocessing.get_context("fork")
    ready, done, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    share = events // connections
    workers = [
        ctx.Process(
            target=_capacity_worker,
            args=(port, ca_file, first_id + k * share, share, bundle, ready, go, done),
        )
        for k in range(connections)
    ]
    for w in workers:
        w.start()
    matching = sum(ready.get(timeout=120) for _ in workers)
    start = time.perf_counter()
    go.set()
    last = max(done.get(timeout=600) for _ in workers)
    for w in workers:
        w.join(30)
        if w.exitcode != 0:
            raise SystemExit(f"a publisher process failed ({w.exitcode})")
    return start, last, matching


def latency_phase(
    client: Publishing, rate: int, seconds: float, first_id: int
) -> tuple[int, int, list[float]]:
    """Send `rate` events/s in bundles every 10 ms; returns (events, matching, ack round trips ms)."""
    per_bundle = max(1, rate // 100)
    payloads = make_events(int(rate * seconds), seed=11)
    payloads = [(first_id + i, s, v) for i, (_, s, v) in enumerate(payloads)]
    acks: list[float] = []
    start = time.perf_counter()
    for k, offset in enumerate(range(0, len(payloads), per_bundle)):
        due = start + k * 0.01
        delay = due - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        now = time.time_ns() // 1_000_000
        sent = time.perf_counter()
        client.publish(
            [
                WireEvent("bench:1.0.0", now, ("bench-host",), None, p)
                for p in payloads[offset : offset + per_bundle]
            ]
        )
        acks.append((time.perf_counter() - sent) * 1000)
    matching = sum(1 for _, _, v in payloads if v >= 90.0)
    return len(payloads), matching, acks


# ---- --redundant: the same plan on a cluster of members, beside a single node -----------------

MODES = ("failover", "active-active", "full-active-active")
PLAN_NAME = "benchFilter"
SEND_ERRORS = (TransportError, ConnectionClosed, RemoteApplicationError, OSError)
Member = tuple[int, str]  # a node's Thrift port and the CA file its certificate verifies with


class ClusterClient:
    """Publishes each bundle as WSO2's clients do in `mode` (the HA tests' `ClusterFeeder`):
    `failover` (`tcp://a|tcp://b`) to one member, starting with `first` (the notifier), and
    when a bundle fails (refused, `NotNotifier`, a closed connection) to the next, for good;
    `active-active` (`tcp://a,tcp://b`) round robin, a failed bundle to the next member;
    `full-active-active` (`{tcp://a},{tcp://b}`) every bundle to every member at once,
    sent once every member answered and one acknowledged (`first_acks`: ms until the first
    did). With one member and any mode: a plain client. Bundles of `bundle_size`."""

    def __init__(self, members: Sequence[Member], mode: str, first: int, bundle_size: int) -> None:
        self.members = list(members)
        self.mode = mode
        self.bundle_size = bundle_size
        self.resent = 0  # bundles sent again (to another member) after a failure
        self.failures: list[str] = []  # why, the first few times
        self.first_acks: list[float] = []
        self.round_trips: list[float] = []  # ms from sending each bundle to its acknowledgement
        self._index = first
        self._clients: list[DataBridgeClient | None] = [None] * len(self.members)
        self._encoded: list[dict[int, bytes]] = [{} for _ in self.members]  # per member's session
        self._chunks: list[list[WireEvent]] = []
        every = mode == "full-active-active" and len(self.members) > 1
        self._pool = ThreadPoolExecutor(len(self.members)) if every else None

    def __enter__(self) -> ClusterClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for client in self._clients:
            if client is not None:
                client.close()
        if self._pool is not None:
            self._pool.shutdown()

    def publish(self, events: Sequence[WireEvent]) -> None:
        for start in range(0, len(events), self.bundle_size):
            self._bundle(list(events[start : start + self.bundle_size]), None)

    def prepare(self, chunks: list[list[WireEvent]]) -> int:
        """Encode every bundle of `chunks` beforehand for the member it goes to (every member in
        full-active-active); returns how many. One sent elsewhere after a failure is encoded then."""
        self._chunks = chunks
        n = len(self.members)
        for i in range(n):
            client = self._client(i)
            self._encoded[i] = {
                k: client.encode(chunk)
                for k, chunk in enumerate(chunks)
                if self._pool is not None
                or (self.mode == "active-active" and (self._index + k) % n == i)
                or (self.mode != "active-active" and self._index == i)
            }
        return len(chunks)

    def aim(self, index: int) -> None:
        """Send to member `index` from now on (failover: the notifier `Side.settle` found)."""
        self._index = index

    def send_prepared(self, k: int) -> None:
        self._bundle(self._chunks[k], k)

    def _client(self, i: int) -> DataBridgeClient:
        client = self._clients[i]
        if client is None:
            port, ca_file = self.members[i]
            client = DataBridgeClient(
                f"tcp://127.0.0.1:{port}",
                username="admin",
                password=PASSWORD,
                ca_file=ca_file,
                bundle_size=self.bundle_size,
                definitions=[DEFINITION],
            )
            client.connect()
            self._clients[i] = client
        return client

    def _send(self, i: int, bundle: list[WireEvent], k: int | None) -> float | None:
        """Send `bundle` to member `i`; when it acknowledged (perf_counter), or None when it failed."""
        try:
            client = self._client(i)
            encoded = self._encoded[i].get(k) if k is not None else None
            if encoded is not None:
                client.send_encoded(encoded)
            else:
                client.publish(bundle)
            return time.perf_counter()
        except SEND_ERRORS as exc:
            if len(self.failures) < 5:
                self.failures.append(f"member {i}: {type(exc).__name__}: {exc}")
            client_ = self._clients[i]
            if client_ is not None:
                client_.abandon()
            self._clients[i] = None
            self._encoded[i] = {}  # encoded for the session that is gone
            return None

    def _bundle(self, bundle: list[WireEvent], k: int | None) -> None:
        deadline = time.monotonic() + 60
        n = len(self.members)
        began = time.perf_counter()
        try:
            self._deliver(bundle, k, n, deadline)
        finally:
            self.round_trips.append((time.perf_counter() - began) * 1000)

    def _deliver(self, bundle: list[WireEvent], k: int | None, n: int, deadline: float) -> None:
        while True:
            if self._pool is not None:
                sent = time.perf_counter()
                acked = [t for t in self._pool.map(lambda i: self._send(i, bundle, k), range(n)) if t]
                if acked:
                    self.first_acks.append((min(acked) - sent) * 1000)
                    return
            elif self._send(self._index, bundle, k) is not None:
                if self.mode == "active-active":
                    self._index = (self._index + 1) % n
                return
            else:
                self._index = (self._index + 1) % n
            self.resent += 1
            if time.monotonic() > deadline:
                raise SystemExit("no member acknowledged a bundle within 60 s")
            time.sleep(0.02)


def _cluster_capacity_worker(
    members: list[Member],
    mode: str,
    first: int,
    first_id: int,
    count: int,
    bundle: int,
    ready: Any,
    go: Any,
    done: Any,
) -> None:
    with ClusterClient(members, mode, first, bundle) as client:
        payloads = [(first_id + i, s, v) for i, (_, s, v) in enumerate(make_events(count, seed=first_id))]
        now = time.time_ns() // 1_000_000
        chunks = [
            [WireEvent("bench:1.0.0", now, ("bench-host",), None, p) for p in payloads[k : k + bundle]]
            for k in range(0, count, bundle)
        ]
        n = client.prepare(chunks)
        ready.put(sum(1 for _, _, v in payloads if v >= 90.0))
        go.wait()
        for k in range(n):
            client.send_prepared(k)
        done.put((time.perf_counter(), client.resent, client.failures))


def cluster_capacity(
    members: list[Member], mode: str, first: int, first_id: int, events: int, connections: int, bundle: int
) -> tuple[float, float, int, float]:
    """`capacity` through `ClusterClient`s: (start, last ack, matching events, the machine's
    busy CPU seconds at the start)."""
    ctx = multiprocessing.get_context("fork")
    ready, done, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    share = events // connections
    workers = [
        ctx.Process(
            target=_cluster_capacity_worker,
            args=(members, mode, first, first_id + k * share, share, bundle, ready, go, done),
        )
        for k in range(connections)
    ]
    for w in workers:
        w.start()
    matching = sum(ready.get(timeout=120) for _ in workers)
    busy = machine_busy()
    start = time.perf_counter()
    go.set()
    answers = [done.get(timeout=600) for _ in workers]
    for w in workers:
        w.join(30)
        if w.exitcode != 0:
            raise SystemExit(f"a publisher process failed ({w.exitcode})")
    report_resent("publisher processes", sum(a[1] for a in answers), [f for a in answers for f in a[2]])
    return start, max(a[0] for a in answers), matching, busy


def report_resent(who: str, resent: int, failures: list[str]) -> None:
    if resent:
        print(f"{who}: {resent} bundles sent again to another member; first failures:", file=sys.stderr)
        for failure in failures:
            print(f"  {failure}", file=sys.stderr)


@contextmanager
def isolated_database(url: str, prefix: str) -> Iterator[str]:
    """The URL of a fresh database (MariaDB/MySQL) or schema (PostgreSQL) on the server of
    `url`, dropped afterwards (as `tests/support/databases.py` makes one)."""
    parsed = sa.make_url(url)
    backend = parsed.get_backend_name()
    name = f"{prefix}_{secrets.token_hex(6)}"
    admin = sa.create_engine(parsed, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        if backend == "mysql":
            conn.execute(sa.text(f"CREATE DATABASE {name} CHARACTER SET utf8mb4"))
            isolated = parsed.set(database=name)
        else:
            conn.execute(sa.text(f"CREATE SCHEMA {name}"))
            isolated = parsed.update_query_dict({"options": f"-csearch_path={name}"})
    try:
        yield isolated.render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            if backend == "mysql":
                conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name}"))
            else:
                conn.execute(sa.text(f"DROP SCHEMA IF EXISTS {name} CASCADE"))
        admin.dispose()


def health(offset: int) -> dict[str, Any]:
    """The node's `/health/details` (logged in as admin)."""
    request = urllib.request.Request(f"http://127.0.0.1:{9763 + offset}/health/details")
    token = base64.b64encode(f"admin:{PASSWORD}".encode()).decode()
    request.add_header("Authorization", f"Basic {token}")
    with urllib.request.urlopen(request, timeout=5) as reply:  # noqa: S310 - local node
        report: dict[str, Any] = json.loads(reply.read())
    return report


def plan_status(offset: int) -> dict[str, Any]:
    """The bench plan's cluster status on the node (`role`, `position`, `standbys_in_sync`, ...);
    {} when it has none (yet)."""
    try:
        return dict(health(offset)["cluster"]["plans"][PLAN_NAME])
    except (OSError, KeyError, TypeError, ValueError):
        return {}


def db_server_pids(url: str) -> list[int]:
    """The processes listening on `url`'s port on this machine (the database server, for its
    CPU; none when it runs elsewhere)."""
    parsed = sa.make_url(url)
    port = parsed.port or {"mysql": 3306, "postgresql": 5432}.get(parsed.get_backend_name(), 0)
    sockets = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # listening
                sockets.add(f"socket:[{fields[9]}]")
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if any(os.readlink(fd) in sockets for fd in (entry / "fd").iterdir()):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def with_children(pids: list[int]) -> list[int]:
    """`pids` and their child processes now (PostgreSQL's backends)."""
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if parent in pids:
                children.append(int(entry.name))
    return [*pids, *children]


def machine_busy() -> float:
    """CPU seconds the whole machine has been busy (every core, every process: /proc/stat)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def own_cpu() -> float:
    """CPU seconds of this process and of its children that ended (the capacity publishers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


@dataclass
class Mark:
    """Where a side stood at a phase's start or end."""

    cpu: list[float]  # CPU seconds so far: each member, the database server, this process, the machine
    received: list[int] = field(default_factory=list)  # events each member took from publishers
    position: int | None = None  # the notifier's log position (a redundant plan)
    lease: tuple[int, int | None, int | None] | None = None  # registry: epoch, required term and position


@dataclass
class Side:
    """One configuration measured: a single node, or the members of the redundant plan."""

    label: str
    mode: str  # "single", or the plan's ha_mode
    processes: list[subprocess.Popen[bytes]]
    offsets: list[int]
    ca_files: list[str]
    ids: list[str]
    db_pids: list[int]
    registry: sa.Engine | None = None  # the members' registry (the lease row)
    notifier: int = 0

    @property
    def members(self) -> list[Member]:
        return [(7611 + o, ca) for o, ca in zip(self.offsets, self.ca_files, strict=True)]

    def settle(self, timeout: float = 60.0) -> None:
        """Wait until a member notifies with every other member in sync (`standbys_in_sync`),
        and every member sees every other alive and names it the preferred notifier: a member
        that notifies because it came up first hands the plan over, after `[ha] failback_ms`
        (5 s), to the one placement prefers once all know each other, in the middle of a phase."""
        if len(self.offsets) == 1:
            return
        deadline = time.monotonic() + timeout
        while True:
            views = []
            for offset in self.offsets:
                try:
                    views.append(health(offset).get("cluster") or {})
                except (OSError, ValueError):
                    views.append({})
            statuses = [dict((v.get("plans") or {}).get(PLAN_NAME) or {}) for v in views]
            notifiers = [i for i, st in enumerate(statuses) if st.get("role") == "notifier"]
            if len(notifiers) == 1:
                i = notifiers[0]
                in_sync = statuses[i].get("standbys_in_sync") or []
                if (
                    all(st.get("preferred") == self.ids[i] for st in statuses)
                    and all(
                        all((v.get("members") or {}).get(m) == "alive" for m in self.ids if m != me)
                        for v, me in zip(views, self.ids, strict=True)
                    )
                    and all(self.ids[j] in in_sync for j in range(len(self.offsets)) if j != i)
                ):
                    self.notifier = i
                    return
            if time.monotonic() > deadline:
                raise SystemExit(f"no notifier with its standbys in sync within {timeout:.0f} s: {views}")
            time.sleep(0.1)

    def cpu(self) -> list[float]:
        db = 0.0
        for pid in with_children(self.db_pids) if self.db_pids else ():
            try:
                db += node_cpu(pid)
            except OSError:
                continue
        return [*(node_cpu(p.pid) for p in self.processes), db, own_cpu(), machine_busy()]

    def mark(self) -> Mark:
        cpu = self.cpu()
        received = [int(health(o)["received"].get("bench:1.0.0", 0)) for o in self.offsets]
        if self.registry is None:
            return Mark(cpu, received)
        status = plan_status(self.offsets[self.notifier])
        if status.get("role") != "notifier":
            print(f"{self.label}: the notifier moved during a phase: {status}", file=sys.stderr)
        c = "epoch, required_term, required_position"
        with self.registry.connect() as conn:
            row = conn.execute(
                sa.text(f"SELECT {c} FROM cep_leases WHERE plan = :p"), {"p": PLAN_NAME}
            ).first()
        lease = None if row is None else (int(row[0]), row[1], row[2])
        return Mark(cpu, received, status.get("position"), lease)

    def finish(self, timeout: float = 20.0) -> Mark:
        """The end of a phase, once the standbys hold every record the notifier has and no member
        works any more (under 5 % of a core for 0.3 s), so that all it cost is counted."""
        deadline = time.monotonic() + timeout
        if len(self.offsets) > 1:
            while time.monotonic() < deadline:
                positions = [plan_status(o).get("position") for o in self.offsets]
                if None not in positions and len(set(positions)) == 1:
                    break
                time.sleep(0.05)
        members = len(self.processes)
        before = self.cpu()[:members]
        while time.monotonic() < deadline:
            time.sleep(0.3)
            now = self.cpu()[:members]
            if all(b - a < 0.015 for a, b in zip(before, now, strict=True)):
                break
            before = now
        return self.mark()


@dataclass
class Measured:
    """One phase on one side: events, seconds until every bundle was acknowledged and until
    every row was committed, where the side stood before and after, round trips in ms."""

    events: int
    acked: float
    rows: float
    start: Mark
    end: Mark
    notifier: int
    acks: list[float] = field(default_factory=list)
    first_acks: list[float] = field(default_factory=list)
    send_to_row: list[float] = field(default_factory=list)
    machine: float = 0.0  # cores the whole machine kept busy from the start until the rows were in

    @property
    def cpu(self) -> list[float]:
        """CPU seconds the phase cost, in `Mark.cpu`'s order."""
        return [b - a for a, b in zip(self.start.cpu, self.end.cpu, strict=True)]


def measure(
    side: Side, args: argparse.Namespace, db: sa.Engine, table: str, inserted_ms: str
) -> dict[str, Measured]:
    """The phases of the plain bench on `side`, every member's CPU counted in each:
    latency (at `--rate`), one connection encoding as it sends, `--connections` publisher
    processes sending bundles encoded beforehand. Each starts with the standbys in sync."""
    out: dict[str, Measured] = {}
    side.settle()
    with ClusterClient(side.members, side.mode, side.notifier, args.bundle_size) as client:
        warm = make_events(min(20_000, args.events), seed=3)
        warm = [(-1 - i, s, v) for i, (_, s, v) in enumerate(warm)]
        throughput(client, warm, args.bundle_size)
        have = sum(1 for _, _, v in warm if v >= 90.0)
        wait_rows(db, table, have, 60)
        side.finish()

        # latency first, on a quiet database (bulk phases leave it busy flushing for seconds)
        first_latency_id = 3 * args.events
        side.settle()
        client.aim(side.notifier)
        client.first_acks = []
        start = side.mark()
        sent, hot, acks = latency_phase(client, args.rate, args.seconds, first_latency_id)
        wait_rows(db, table, have + hot, 60)
        have += hot
        end = side.finish()
        with db.connect() as conn:
            query = f"SELECT {inserted_ms} - sent_ms FROM {table} WHERE id >= {first_latency_id}"
            lat = [float(v) for (v,) in conn.execute(sa.text(query))]
        out["latency"] = Measured(
            sent, args.seconds, args.seconds, start, end, side.notifier, acks, list(client.first_acks), lat
        )

        payloads = make_events(args.events)
        have += sum(1 for _, _, v in payloads if v >= 90.0)
        side.settle()
        client.aim(side.notifier)
        client.round_trips = []
        start = side.mark()
        t0 = throughput(client, payloads, args.bundle_size)
        acked = time.perf_counter()
        done = wait_rows(db, table, have, 300)
        machine = (machine_busy() - start.cpu[-1]) / (time.perf_counter() - t0)
        out["one"] = Measured(
            args.events, acked - t0, done - t0, start, side.finish(), side.notifier, list(client.round_trips)
        )
        out["one"].machine = machine
        report_resent(f"{side.label}, the single publisher", client.resent, client.failures)

    side.settle()
    start = side.mark()
    began, last, hot, busy = cluster_capacity(
        side.members, side.mode, side.notifier, args.events, args.events, args.connections, args.bundle_size
    )
    have += hot
    done = wait_rows(db, table, have, 300)
    machine = (machine_busy() - busy) / (time.perf_counter() - began)
    n = args.events // args.connections * args.connections
    out["many"] = Measured(n, last - began, done - began, start, side.finish(), side.notifier)
    out["many"].machine = machine
    total = count_rows(db, table)
    if total != have:
        raise SystemExit(f"{side.label}: {table} holds {total} rows, expected {have}")
    return out


def stop_all(processes: Sequence[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def apply_plan(config: Path, document: Path) -> None:
    """`cepheus apply` with the node's config, once the registry has its schema."""
    command = [sys.executable, "-m", "app.cli", "apply", str(document), "--config", str(config)]
    for _ in range(100):
        applied = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
        if applied.returncode == 0 or "schema" not in applied.stderr:
            break
        time.sleep(0.2)
    if applied.returncode != 0:
        raise SystemExit(f"cepheus apply failed:\n{applied.stdout}{applied.stderr}")


def run_single(args: argparse.Namespace, tmp: Path, sink: str, db_pids: list[int]) -> dict[str, Measured]:
    """The plain bench's node (SQLite registry of its own), the plan not redundant."""
    tmp.mkdir()
    db = sa.create_engine(sink)
    table = f"bench_out_{secrets.token_hex(4)}"
    inserted_ms = create_table(db, table)
    (tmp / "plan.siddhi").write_text(PLAN, encoding="utf-8")
    (tmp / "apply.toml").write_text(
        APPLY.format(output=sink, table=table, interval=0 if args.persistence == "none" else 60),
        encoding="utf-8",
    )
    offset = free_offset()
    process = start_node(tmp, offset, args.persistence)
    try:
        apply_plan(tmp / "cepheus.toml", tmp / "apply.toml")
        wait_ready(process, offset, tmp)
        side = Side(
            "single node", "single", [process], [offset], [str(tmp / "var" / "tls" / "cert.pem")], [], db_pids
        )
        return measure(side, args, db, table, inserted_ms)
    finally:
        stop_all([process])
        db.dispose()


# ---- --cluster-tls: the cluster channel over mutual TLS ----------------------------------------


def _subject(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Cepheus bench"),
        ]
    )


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def cluster_certificates(directory: Path, ids: Sequence[str]) -> list[dict[str, str]]:
    """A throwaway cluster CA in `directory` and, for each member of `ids`, a certificate it
    signs (TLS server and client, ECDSA P-256) and its key, as docs/high-availability.md has an
    operator make them with openssl: each member's `[cluster]` cert_file, key_file, ca_file."""
    directory.mkdir(parents=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _subject("Cepheus bench cluster CA")
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_file = directory / "ca.pem"
    ca_file.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    sections = []
    for member in ids:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(_subject(member))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_key_usage(ca=False), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                critical=False,
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
            )
            .sign(ca_key, hashes.SHA256())
        )
        cert_file, key_file = directory / f"{member}.pem", directory / f"{member}.key"
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_file.touch(0o600)
        key_file.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        sections.append({"cert_file": str(cert_file), "key_file": str(key_file), "ca_file": str(ca_file)})
    return sections


def check_cluster_tls(address: str, files: dict[str, str]) -> str:
    """Prove that the cluster port at `address` speaks mutual TLS: a handshake with a member's
    certificate (`files`) that verifies the port's against the cluster CA. Returns the protocol
    version. (The member then logs the connection as refused: it ends before the secret's
    handshake.)"""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False  # as the members: the chain, not the name
    context.load_verify_locations(files["ca_file"])
    context.load_cert_chain(files["cert_file"], files["key_file"])
    host, port = address.rsplit(":", 1)
    try:
        with (
            socket.create_connection((host, int(port)), timeout=5) as raw,
            context.wrap_socket(raw) as tls,
        ):
            version = tls.version()
    except OSError as exc:  # ssl.SSLError too
        raise SystemExit(
            f"--cluster-tls: the cluster port {address} did not complete mutual TLS: {exc}"
        ) from None
    if version is None:
        raise SystemExit(f"--cluster-tls: no TLS on the cluster port {address}")
    return version


def run_cluster(
    args: argparse.Namespace, tmp: Path, sink: str, registry: str, db_pids: list[int], *, tls: bool = False
) -> dict[str, Measured]:
    """The same plan, redundant (`--redundant` mode) on `--members` members sharing `registry`;
    with `tls`, their cluster channel over mutual TLS (certificates made in `tmp`)."""
    tmp.mkdir()
    db = sa.create_engine(sink)
    table = f"bench_out_{secrets.token_hex(4)}"
    inserted_ms = create_table(db, table)
    (tmp / "plan.siddhi").write_text(PLAN, encoding="utf-8")
    document = APPLY.format(output=sink, table=table, interval=0 if args.persistence == "none" else 60)
    document = document.replace(
        'file = "plan.siddhi"',
        f'file = "plan.siddhi"\ndistributed_mode = "redundant"\nha_mode = "{args.redundant}"',
    )
    (tmp / "apply.toml").write_text(document, encoding="utf-8")
    offsets: list[int] = []
    for _ in range(args.members):
        offsets.append(free_offset(offsets))
    names = "abc"[: args.members]
    ids = [f"bench-{name}" for name in names]
    addresses = [f"127.0.0.1:{4000 + o}" for o in offsets]
    secret = secrets.token_hex(16)
    certificates = cluster_certificates(tmp / "cluster-tls", ids) if tls else [{} for _ in ids]
    dirs = [tmp / name for name in names]
    for d in dirs:
        d.mkdir()
    processes: list[subprocess.Popen[bytes]] = []
    leases = sa.create_engine(registry)
    try:
        first = dirs[0] / "cepheus.toml"
        for i, d in enumerate(dirs):
            cluster: dict[str, Any] = {
                "host": "127.0.0.1",
                "wka": addresses,
                "advertise": addresses[i],
                "secret": secret,
                **certificates[i],
            }
            processes.append(
                start_node(
                    d, offsets[i], args.persistence, registry=registry, node_id=ids[i], cluster=cluster
                )
            )
            if i == 0:  # the first member creates the registry's schema: apply once it has
                apply_plan(first, tmp / "apply.toml")
        for process, offset, d in zip(processes, offsets, dirs, strict=True):
            wait_ready(process, offset, d)
        if tls:  # the first member's port, with the last member's certificate
            version = check_cluster_tls(addresses[0], certificates[-1])
            print(f"--cluster-tls: the members' cluster port speaks mutual TLS ({version})", file=sys.stderr)
        side = Side(
            cluster_label(args, tls),
            args.redundant,
            processes,
            offsets,
            [str(d / "var" / "tls" / "cert.pem") for d in dirs],
            ids,
            db_pids,
            leases,
        )
        return measure(side, args, db, table, inserted_ms)
    finally:
        stop_all(processes)
        db.dispose()
        leases.dispose()


def cluster_label(args: argparse.Namespace, tls: bool) -> str:
    return f"{args.redundant} ×{args.members}" + (" TLS" if tls else "")


def compare(args: argparse.Namespace) -> int:
    """`--redundant`: the plain bench on a single node, then on the redundant plan (in clear,
    over TLS, or both, as `--cluster-tls` says: each cluster with a registry of its own); one
    table. With `--repeat N`, N such rounds one after the other, each with fresh processes and
    databases: the table of the last, then each round's ratios and their medians (on two shared
    cores one run's ratio swings by a quarter)."""
    backend = sa.make_url(args.output).get_backend_name()
    if backend not in ("mysql", "postgresql"):
        raise SystemExit("--redundant needs --output on MariaDB/MySQL or PostgreSQL (the shared registry)")
    db_pids = db_server_pids(args.output)
    variants = {None: [False], "on": [True], "compare": [False, True]}[args.cluster_tls]
    rounds: list[tuple[dict[str, Measured], list[tuple[str, dict[str, Measured]]]]] = []
    for k in range(args.repeat):
        redundant: list[tuple[str, dict[str, Measured]]] = []
        with (
            tempfile.TemporaryDirectory(prefix="cepheus-bench-") as tmpdir,
            isolated_database(args.output, "cep_bench_sink") as sink,
        ):
            tmp = Path(tmpdir)
            single = run_single(args, tmp / "single", sink, db_pids)
            for tls in variants:
                with isolated_database(args.output, "cep_bench_reg") as registry:
                    where = tmp / ("cluster-tls" if tls else "cluster")
                    redundant.append(
                        (cluster_label(args, tls), run_cluster(args, where, sink, registry, db_pids, tls=tls))
                    )
        rounds.append((single, redundant))
        if args.repeat > 1:
            print(f"round {k + 1} of {args.repeat} done", file=sys.stderr, flush=True)
    print_comparison(args, *rounds[-1])
    if args.repeat > 1:
        print_rounds(args, rounds)
    return 0


def print_rounds(
    args: argparse.Namespace,
    rounds: Sequence[tuple[dict[str, Measured], list[tuple[str, dict[str, Measured]]]]],
) -> None:
    """Each round's events/s until acknowledged, redundant/single, per capacity phase; then the medians."""
    phases = (("one", "1 connection"), ("many", f"{args.connections} connections"))
    labels = [label for label, _ in rounds[0][1]]
    print(f"redundant/single, events/s until all acknowledged, in each of {len(rounds)} rounds:")
    ratios: dict[tuple[str, str], list[float]] = {}
    for k, (single, redundant) in enumerate(rounds, 1):
        cells = []
        for key, what in phases:
            for label, measured in redundant:
                ratio = single[key].acked / measured[key].acked  # (durations: their events are the same)
                ratios.setdefault((what, label), []).append(ratio)
                cells.append(f"{what}{', ' + label if len(labels) > 1 else ''}: {ratio:.2f}")
        print(f"  round {k}: " + "; ".join(cells))
    print(
        "  median: "
        + "; ".join(
            f"{what}{', ' + label if len(labels) > 1 else ''}: {statistics.median(values):.2f}"
            for (what, label), values in ratios.items()
        )
    )


def print_comparison(
    args: argparse.Namespace,
    single: dict[str, Measured],
    redundant: Sequence[tuple[str, dict[str, Measured]]],
) -> None:
    """One table: the single node, then each redundant run (`redundant`: label, phases), then
    the ratios redundant/single of each and, with two runs (clear and TLS), the second/first."""
    n = args.members
    labels = [label for label, _ in redundant]
    pair = len(redundant) == 2
    blank = ("",) * (len(redundant) + pair)  # the ratio columns
    rows: list[tuple[str, ...]] = []

    def joined(values: Sequence[float], per: float, scale: float = 1.0) -> str:
        return " / ".join(f"{v / per * scale:.2f}" for v in values)

    def cpu_rows(a: Measured, bs: list[Measured], busy: bool) -> None:
        """CPU s per million events of the phase: notifier, standby(s), database, publisher; with
        `busy`, also the cores each kept busy until the rows were committed."""
        standbys = [[i for i in range(n) if i != b.notifier] for b in bs]
        for what, x, ys in (
            ("notifier (single: the node)", [0], [[b.notifier] for b in bs]),
            ("standby" + ("s" if n > 2 else ""), [], standbys),
            ("database server", [-3], [[-3] for _ in bs]),
            ("publisher (this bench)", [-2], [[-2] for _ in bs]),
        ):
            cells = [joined([b.cpu[i] for i in y], b.events, 1e6) for b, y in zip(bs, ys, strict=True)]
            rows.append(
                (f"  CPU s / M events: {what}", joined([a.cpu[i] for i in x], a.events, 1e6), *cells, *blank)
            )
        if busy:
            cells = [
                joined([b.cpu[i] for i in (b.notifier, *others, -3, -2)], b.rows)
                for b, others in zip(bs, standbys, strict=True)
            ]
            rows.append(
                (
                    "  cores busy: notifier, standby(s), database, publisher",
                    joined([a.cpu[i] for i in (0, -3, -2)], a.rows),
                    *cells,
                    *blank,
                )
            )
            machine = [f"{m.machine:.2f} of {os.cpu_count()}" for m in (a, *bs)]
            rows.append(("  cores busy: the whole machine, every process", *machine, *blank))

    def rate_rows(a: Measured, bs: list[Measured]) -> None:
        for what, (x, *ys) in (
            ("all acknowledged", [m.acked for m in (a, *bs)]),
            ("all rows committed", [m.rows for m in (a, *bs)]),
        ):
            rates = [f"{m.events / t:,.0f}" for m, t in zip((a, *bs), (x, *ys), strict=True)]
            ratios = [f"{x / y:.2f}" for y in ys] + ([f"{ys[0] / ys[1]:.2f}"] if pair else [])
            rows.append((f"  events/s until {what}", *rates, *ratios))

    def spread_rows(what: str, a: list[float], bs: list[list[float]]) -> None:
        for q in (0.5, 0.99):
            shown = [f"{percentile(v, q):.1f}" if v else "" for v in (a, *bs)]
            rows.append((f"  {what} p{q * 100:.0f} ms", *shown, *blank))

    def title(what: str) -> None:
        rows.append((what, "", *("" for _ in redundant), *blank))

    a, bs = single["latency"], [r["latency"] for _, r in redundant]
    title(f"{args.rate:,} events/s for {args.seconds:.1f} s ({a.events:,} events)")
    spread_rows("bundle sent → acknowledged", a.acks, [b.acks for b in bs])
    if any(b.first_acks for b in bs):
        spread_rows("bundle sent → first member acknowledged", [], [b.first_acks for b in bs])
    spread_rows("send → row committed", a.send_to_row, [b.send_to_row for b in bs])
    cpu_rows(a, bs, busy=False)
    for key, what in (
        ("one", "1 connection, encoding as it sends"),
        ("many", f"{args.connections} connections, bundles encoded before"),
    ):
        a, bs = single[key], [r[key] for _, r in redundant]
        title(f"{what} ({a.events:,} events)")
        rate_rows(a, bs)
        if a.acks and all(b.acks for b in bs):
            spread_rows(f"bundle of {args.bundle_size} sent → acknowledged", a.acks, [b.acks for b in bs])
        cpu_rows(a, bs, busy=True)

    if pair:
        ratio_header: tuple[str, ...] = ("plain/single", "TLS/single", "TLS/plain")
    else:
        ratio_header = ("redundant/single",)
    header = ("phase", "single node", *labels, *ratio_header)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    channel = {
        None: "",
        "on": "; the cluster channel over mutual TLS (a throwaway cluster CA, ECDSA P-256)",
        "compare": (
            "; redundant twice, the cluster channel in clear and then over mutual TLS (a throwaway "
            "cluster CA, ECDSA P-256), each cluster with a registry of its own"
        ),
    }[args.cluster_tls]
    print(
        f"cepheus server, filter plan (10 % match) → rdbms adapter → {sa.make_url(args.output).get_backend_name()}; "
        f"bundles of {args.bundle_size}; persistence {args.persistence}; the same plan and events on a single "
        f"node and redundant ({args.redundant}, {n} members: 1 notifier, {n - 1} standby{'s' if n > 2 else ''}); "
        f"registry and sink in databases of their own on the same server{channel}"
    )
    for r in [header, tuple("-" * w for w in widths), *rows]:
        print(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
            )
        )
    phases = (("latency", "latency"), ("one", "1 connection"), ("many", "connections"))
    print("the redundant plan's lease in the registry over each phase (a requirement that follows the log:")
    print("acknowledgements waited for a confirming renewal, ha/acks.py `Confirm`):")
    for label, measured in redundant:
        tag = f"{label}, " if pair else ""
        for key, what in phases:
            m = measured[key]
            print(
                f"  {tag}{what}: lease (epoch, required term, required position) "
                f"{m.start.lease} → {m.end.lease}; notifier's log position {m.start.position} → {m.end.position}"
            )
    print("events each member took from the publishers in each phase (notifier first; in failover all")
    print("go to the notifier, a standby relays what it takes):")
    for label, measured in redundant:
        tag = f"{label}, " if pair else ""
        for key, what in phases:
            m = measured[key]
            order = [m.notifier, *(i for i in range(n) if i != m.notifier)]
            print(
                f"  {tag}{what}: " + " / ".join(f"{m.end.received[i] - m.start.received[i]:,}" for i in order)
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--bundle-size", type=int, default=500)
    parser.add_argument(
        "--connections", type=int, default=2, help="publisher processes in the capacity phase"
    )
    parser.add_argument("--rate", type=int, default=10_000, help="events/s in the latency phase")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the latency phase")
    parser.add_argument("--output", default="mysql+pymysql://root@127.0.0.1:3306/test", help="SQLAlchemy URL")
    parser.add_argument(
        "--persistence",
        choices=("none", "nolog", "off", "interval", "always"),
        default="none",
        help="persistence mode: none, without the input log, or with it and this fsync policy",
    )
    parser.add_argument(
        "--redundant",
        choices=MODES,
        help="also run the plan redundant on --members members in this ha_mode; print single vs redundant",
    )
    parser.add_argument(
        "--members", type=int, choices=(2, 3), default=2, help="cluster members with --redundant"
    )
    parser.add_argument(
        "--cluster-tls",
        nargs="?",
        const="on",
        choices=("on", "compare"),
        help="with --redundant: the members' cluster channel over mutual TLS (a throwaway CA made here); "
        "compare: the redundant plan twice, in clear and over TLS, side by side",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="with --redundant: this many rounds of single and redundant, and the medians",
    )
    args = parser.parse_args()
    if args.repeat < 1 or (args.repeat > 1 and not args.redundant):
        parser.error("--repeat needs --redundant and a count of 1 or more")
    if args.cluster_tls and not args.redundant:
        parser.error("--cluster-tls needs --redundant")
    if args.redundant:
        return compare(args)

    table = f"bench_out_{secrets.token_hex(4)}"
    db = sa.create_engine(args.output)
    inserted_ms = create_table(db, table)
    offset = free_offset()
    rows: list[tuple[str, ...]] = []
    with tempfile.TemporaryDirectory(prefix="cepheus-bench-") as tmpdir:
        tmp = Path(tmpdir)
        (tmp / "plan.siddhi").write_text(PLAN, encoding="utf-8")
        (tmp / "apply.toml").write_text(
            APPLY.format(output=args.output, table=table, interval=0 if args.persistence == "none" else 60),
            encoding="utf-8",
        )
        process = start_node(tmp, offset, args.persistence)
        try:
            command = [sys.executable, "-m", "app.cli", "apply", str(tmp / "apply.toml")]
            # the node creates the registry schema: apply once it has
            for _ in range(100):
                applied = subprocess.run(
                    [*command, "--config", str(tmp / "cepheus.toml")],
                    capture_output=True,
                    text=True,
                    cwd=REPO,
                )
                if applied.returncode == 0 or "schema" not in applied.stderr:
                    break
                time.sleep(0.2)
            if applied.returncode != 0:
                raise SystemExit(f"cepheus apply failed:\n{applied.stdout}{applied.stderr}")
            wait_ready(process, offset, tmp)
            client = DataBridgeClient(
                f"tcp://127.0.0.1:{7611 + offset}",
                username="admin",
                password=PASSWORD,
                ca_file=str(tmp / "var" / "tls" / "cert.pem"),
                bundle_size=args.bundle_size,
                definitions=[DEFINITION],
            )
            with client:
                warm = make_events(20_000, seed=3)
                warm = [(-1 - i, s, v) for i, (_, s, v) in enumerate(warm)]
                throughput(client, warm, args.bundle_size)
                have = sum(1 for _, _, v in warm if v >= 90.0)
                wait_rows(db, table, have, 60)

                # latency first, on a quiet database (bulk phases leave it busy flushing for seconds)
                first_latency_id = 3 * args.events
                sent, hot, acks = latency_phase(client, args.rate, args.seconds, first_latency_id)
                wait_rows(db, table, hot, 60, f"WHERE id >= {first_latency_id}")
                have += hot
                with db.connect() as conn:
                    query = f"SELECT {inserted_ms} - sent_ms FROM {table} WHERE id >= {first_latency_id}"
                    lat = [float(v) for (v,) in conn.execute(sa.text(query))]
                p50, p99 = percentile(lat, 0.5), percentile(lat, 0.99)
                rows.append(
                    (
                        f"{args.rate:,} events/s: send → row committed",
                        f"{sent:,}",
                        f"{args.seconds:.1f}",
                        f"{sent / args.seconds:,.0f}",
                        f"{p50:.1f}",
                        f"{p99:.1f}",
                    )
                )
                rows.append(
                    (
                        "  bundle sent → acknowledged",
                        f"{len(acks):,} bundles",
                        "",
                        "",
                        f"{percentile(acks, 0.5):.1f}",
                        f"{percentile(acks, 0.99):.1f}",
                    )
                )

                payloads = make_events(args.events)
                have += sum(1 for _, _, v in payloads if v >= 90.0)
                cpu = node_cpu(process.pid)
                t0 = throughput(client, payloads, args.bundle_size)
                acked = time.perf_counter()
                done = wait_rows(db, table, have, 300)
                n = args.events
                used = node_cpu(process.pid) - cpu
                rows.append(
                    ("1 connection, encoding as it sends", f"{n:,}", "", "", "", "", f"{used / n * 1e6:.2f}")
                )
                rows.append(
                    ("  all acknowledged", "", f"{acked - t0:.2f}", f"{n / (acked - t0):,.0f}", "", "")
                )
                rows.append(
                    ("  all rows in the database", "", f"{done - t0:.2f}", f"{n / (done - t0):,.0f}", "", "")
                )

            cpu = node_cpu(process.pid)
            start, last, hot = capacity(
                7611 + offset,
                str(tmp / "var" / "tls" / "cert.pem"),
                args.events,
                args.events,
                args.connections,
                args.bundle_size,
            )
            have += hot
            done = wait_rows(db, table, have, 300)
            n = args.events // args.connections * args.connections
            used = node_cpu(process.pid) - cpu
            rows.append(
                (
                    f"{args.connections} connections, bundles encoded before",
                    f"{n:,}",
                    "",
                    "",
                    "",
                    "",
                    f"{used / n * 1e6:.2f}",
                )
            )
            rows.append(
                ("  all acknowledged", "", f"{last - start:.2f}", f"{n / (last - start):,.0f}", "", "")
            )
            rows.append(
                (
                    "  all rows in the database",
                    "",
                    f"{done - start:.2f}",
                    f"{n / (done - start):,.0f}",
                    "",
                    "",
                )
            )
            total = count_rows(db, table)
            if total != have:
                raise SystemExit(f"{table} holds {total} rows, expected {have}")
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(60)
            with db.begin() as conn:
                conn.execute(sa.text(f"DROP TABLE IF EXISTS {table}"))
            db.dispose()
    header = ("phase", "events", "seconds", "events/s", "p50 ms", "p99 ms", "CPU µs/event")
    rows = [r + ("",) * (len(header) - len(r)) for r in rows]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print(
        f"cepheus server, filter plan (10 % match) → rdbms adapter → {sa.make_url(args.output).get_backend_name()}; bundles of {args.bundle_size}; "
        f"persistence {args.persistence}"
    )
    for r in [header, tuple("-" * w for w in widths), *rows]:
        print(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
