"""Database outages: events stream on while the database is cut off, and none is lost.

A TCP proxy between the adapter and MariaDB/PostgreSQL is cut (listener and every live
connection closed) for about three seconds while events keep coming, then restored.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa

from adapters.output import RdbmsAdapter, build_adapter
from engine.events import Event
from engine.types import AttrType
from formatters import build_formatter

from .database import Database
from .tcp_proxy import TcpProxy

CUSTOMERS = ["Tom", "John", "Ratha", "Isabelle", "Paul", "Mohan", "Suho"]
ATTRIBUTES = [("seq", AttrType.LONG), ("sumOrderId", AttrType.LONG), ("customerName", AttrType.STRING)]
MAPPING = {
    "mappings": [
        {"column": "seq", "attribute": "seq"},
        {"column": "sum_order_id", "attribute": "sumOrderId"},
        {"column": "customer_name", "attribute": "customerName"},
    ]
}
COLUMNS = [
    {"name": "seq", "type": "BIGINT"},
    {"name": "sum_order_id", "type": "BIGINT"},
    {"name": "customer_name", "type": "VARCHAR(20)"},
]
FAST_RETRY = {"retry_initial_ms": 50, "retry_max_ms": 400, "timeout_s": 2}


def proxied(url: str, proxy: TcpProxy) -> sa.URL:
    return sa.make_url(url).set(host="127.0.0.1", port=proxy.port)


def wait_for(what: str, predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


class Producer(threading.Thread):
    """Publishes one event every `interval` seconds until stopped."""

    def __init__(self, out: RdbmsAdapter, interval: float = 0.004) -> None:
        super().__init__(daemon=True)
        self.out = out
        self.interval = interval
        self.fmt = build_formatter("map", ATTRIBUTES, MAPPING)
        self.sent = 0
        self.accepted = 0
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            i = self.sent
            event = Event(1000 + i, (i, i, CUSTOMERS[i % len(CUSTOMERS)]))
            self.accepted += self.out.publish(self.fmt.format([event]))
            self.sent += 1
            time.sleep(self.interval)


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize("mode", ["insert", "insert-or-update"])
def test_no_event_is_lost_while_the_database_is_cut_off(net_db: Database, mode: str) -> None:
    table = net_db.table_name("outage")
    target = sa.make_url(net_db.url)
    with TcpProxy(target.host or "127.0.0.1", target.port or 0) as proxy:
        keys = ["customer_name"] if mode != "insert" else []
        config = {
            "datasource": "db",
            "table": table,
            "mode": mode,
            "key_columns": keys,
            "create_table": True,
            "columns": COLUMNS,
        }
        out = build_adapter(
            "rdbms",
            "outage",
            {**config, **FAST_RETRY, "batch_events": 25},
            {"db": proxied(net_db.url, proxy)},
        )
        assert isinstance(out, RdbmsAdapter)
        net_db.adapters.append(out)
        out.start()
        producer = Producer(out)
        producer.start()
        try:
            wait_for("rows before the cut", lambda: out.stats.written >= 100)
            proxy.cut()
            errors_at_cut = out.stats.errors
            with pytest.raises(OSError):
                socket_probe(proxy.port)
            time.sleep(3.0)
            during = out.stats
            assert during.errors > errors_at_cut, "the adapter never noticed the outage"
            assert during.pending > 0, "events must wait in the buffer while the database is away"
            proxy.restore()
            wait_for("rows after the restore", lambda: out.stats.written >= during.written + 100)
        finally:
            producer.halt.set()
            producer.join(10)
        assert out.flush(timeout=60), f"not everything was written: {out.stats}"
        s = out.stats
    n = producer.sent
    assert producer.accepted == n and n > 300
    assert (s.published, s.written, s.dropped, s.pending) == (n, n, 0, 0)
    if mode == "insert":
        seqs = [seq for (seq,) in net_db.rows(table, "seq")]
        assert set(seqs) == set(range(n)), "an event went missing"
        duplicates = sum(c - 1 for c in Counter(seqs).values())
        assert duplicates <= s.in_doubt, "duplicates only come from commits interrupted by the cut"
    else:
        last = {CUSTOMERS[i % len(CUSTOMERS)]: i for i in range(n)}
        expected = sorted((name, i, i) for name, i in last.items())
        assert net_db.rows(table, "customer_name", "sum_order_id", "seq") == expected


def socket_probe(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=1):
        pass


@pytest.mark.timeout(120)
def test_a_tiny_buffer_that_drops_overflows_and_counts_it(
    net_db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    table = net_db.table_name("overflow")
    target = sa.make_url(net_db.url)
    proxy = TcpProxy(target.host or "127.0.0.1", target.port or 0)  # not listening yet: the database is down
    try:
        config = {
            "datasource": "db",
            "table": table,
            "mode": "insert",
            "create_table": True,
            "columns": COLUMNS,
            "buffer_events": 5,
            "on_full": "drop",
        }
        out = build_adapter("rdbms", "tiny", {**config, **FAST_RETRY}, {"db": proxied(net_db.url, proxy)})
        net_db.adapters.append(out)
        out.start()
        fmt = build_formatter("map", ATTRIBUTES, MAPPING)
        with caplog.at_level(logging.WARNING, logger="adapters.output.buffered"):
            accepted = [out.publish(fmt.format([Event(i, (i, i, "Tom"))])) for i in range(12)]
            wait_for("a failed attempt", lambda: any("unavailable" in r.getMessage() for r in caplog.records))
        assert accepted == [1] * 5 + [0] * 7
        s = out.stats
        assert (s.published, s.overflow, s.pending, s.written, s.dropped) == (5, 7, 5, 0, 7)
        warnings = [r.getMessage() for r in caplog.records if "buffer full" in r.getMessage()]
        assert warnings and "tiny" in warnings[0]
        assert s.errors > 0
        proxy.restore()
        assert out.flush(timeout=60)
        assert net_db.rows(table, "seq") == [(i,) for i in range(5)]
    finally:
        proxy.cut()


def test_sqlite_outage_overflow_and_recovery(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """SQLite has no network to cut: a database file in a directory that does not exist yet is just as unreachable."""
    folder = tmp_path / "later"
    url = f"sqlite:///{folder / 'db.sqlite'}"
    config = {"url": url, "table": "t", "mode": "insert-or-update", "key_columns": ["customer_name"]}
    out = build_adapter(
        "rdbms",
        "lite",
        {
            **config,
            "create_table": True,
            "columns": COLUMNS,
            "buffer_events": 3,
            "on_full": "drop",
            **FAST_RETRY,
        },
    )
    try:
        out.start()
        with caplog.at_level(logging.WARNING, logger="adapters.output.buffered"):
            got = out.publish([{"seq": i, "sum_order_id": i, "customer_name": f"c{i}"} for i in range(5)])
            wait_for("a failed attempt", lambda: out.stats.errors > 0)
        assert got == 3 and out.stats.overflow == 2
        folder.mkdir()
        assert out.flush(timeout=30)
    finally:
        out.stop(timeout=5)
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT customer_name FROM t ORDER BY customer_name")).all()
    engine.dispose()
    assert [r[0] for r in rows] == ["c0", "c1", "c2"]
