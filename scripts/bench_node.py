"""End-to-end node benchmark: publisher → Thrift → filter plan → RDBMS adapter → database.

    python scripts/bench_node.py [--events 1000000] [--rate 10000] [--seconds 10]
                                 [--output mysql+pymysql://root@127.0.0.1:3306/test]
                                 [--persistence none|nolog|off|interval|always]

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
"""

from __future__ import annotations

import argparse
import base64
import json
import multiprocessing
import os
import random
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from adapters.thrift import DataBridgeClient, WireEvent, parse_definition

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


def free_offset() -> int:
    for offset in range(300, 3000, 11):
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


def start_node(tmp: Path, offset: int, persistence: str) -> subprocess.Popen[bytes]:
    config = tmp / "cepheus.toml"
    logged = persistence not in ("none", "nolog")
    fsync = persistence if logged else "interval"
    config.write_text(
        f'[node]\nport_offset = {offset}\ndata_dir = "{tmp / "var"}"\nlog_level = "WARNING"\n'
        f'[registry]\nurl = "sqlite:///{tmp / "registry.db"}"\npoll_seconds = 0.2\n'
        '[console]\nhost = "127.0.0.1"\n[thrift]\nhost = "127.0.0.1"\n'
        f'[persistence]\ninput_log = {"true" if logged else "false"}\nfsync = "{fsync}"\n',
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


def make_events(n: int, seed: int = 7) -> list[tuple[Any, ...]]:
    rng = random.Random(seed)
    return [(i, f"sensor-{i % 50}", float(rng.randrange(1000)) / 10.0) for i in range(n)]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def throughput(client: DataBridgeClient, payloads: list[tuple[Any, ...]], bundle: int) -> float:
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
    client: DataBridgeClient, rate: int, seconds: float, first_id: int
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
    args = parser.parse_args()

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
