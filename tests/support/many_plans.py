"""Many small redundant plans for the scale tests: plan `pNNN` imports stream `sNNN`, and
writes one row (plan, seq) per event to one sink table (`plan_rows`) through one RDBMS adapter, so what a
sink must hold is known exactly: every acknowledged (plan, seq) once.

`LeaseSampler`: every lease's time left and epoch, read from the registry every 100 ms.

`ManyFeeders`: clients in threads, each sending bundles of a few events to plans in turn,
to one member and, when a bundle fails, to the next (a member that does not notify a plan
relays the bundle to the one that does).
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from pathlib import Path

import sqlalchemy as sa

from adapters.thrift import DataBridgeClient
from adapters.thrift.definitions import parse_definition
from adapters.thrift.errors import ConnectionClosed, RemoteApplicationError, TransportError
from adapters.thrift.events import WireEvent
from tests.support.nodes import ADMIN_PASSWORD, NodeProcess

RELEASED_LONG_AGO = -(10**9)  # ms left of a released lease (it expired at the epoch): held by no one


def name(i: int) -> str:
    return f"p{i:03d}"


def document(plans: int, sink: str, mode: str) -> str:
    parts = []
    for i in range(plans):
        parts.append(
            f'[[streams]]\nname = "s{i:03d}"\npayload = [{{ name = "seq", type = "LONG" }}]\n\n'
            f'[[streams]]\nname = "o{i:03d}"\n'
            'payload = [{ name = "plan", type = "STRING" }, { name = "seq", type = "LONG" }]\n\n'
            f'[[plans]]\nname = "{name(i)}"\nfile = "{name(i)}.siddhi"\n'
            f'distributed_mode = "redundant"\nha_mode = "{mode}"\n\n'
            f'[[formatters]]\nname = "f{i:03d}"\nstream = "o{i:03d}:1.0.0"\nadapter = "outTable"\ntype = "map"\n'
        )
    parts.append(
        f'[[datasources]]\nname = "sink"\nurl = "{sink}"\n\n'
        '[[adapters]]\nname = "outTable"\ntype = "rdbms"\ndatasource = "sink"\ntable = "plan_rows"\n'
        'mode = "insert"\ncreate_table = true\nbatch_events = 50\n'
        'columns = [{ name = "plan", type = "VARCHAR(10)" }, { name = "seq", type = "BIGINT" }]\n'
    )
    return "\n".join(parts)


def plan_text(i: int) -> str:
    return (
        f"@app:name('{name(i)}')\n"
        f"@Import('s{i:03d}:1.0.0') define stream In (seq long);\n"
        f"@Export('o{i:03d}:1.0.0') define stream Out (plan string, seq long);\n"
        f"from In select '{name(i)}' as plan, seq insert into Out;\n"
    )


def provision(node: NodeProcess, tmp: Path, plans: int, sink: str, mode: str) -> None:
    for i in range(plans):
        (tmp / f"{name(i)}.siddhi").write_text(plan_text(i), encoding="utf-8")
    (tmp / "apply.toml").write_text(document(plans, sink, mode), encoding="utf-8")
    node.cli("db", "upgrade")
    node.cli("apply", str(tmp / "apply.toml"))


def settle_sink(url: str, acked: set[tuple[str, int]], timeout: float = 120.0) -> Counter[tuple[str, int]]:
    """The sink's rows once it holds every acknowledged event, or once it took none for 10 s
    (what the adapters still held when the clients stopped reaches it meanwhile)."""
    deadline = time.monotonic() + timeout
    rows = sink_counts(url)
    still_since = time.monotonic()
    while not acked <= set(rows) and time.monotonic() < deadline and time.monotonic() - still_since < 10:
        time.sleep(0.5)
        again = sink_counts(url)
        if sum(again.values()) != sum(rows.values()):
            still_since = time.monotonic()
        rows = again
    return rows


def tally(url: str, acked: set[tuple[str, int]]) -> tuple[set[tuple[str, int]], int, int]:
    """Once the sink settled (`settle_sink`): (acknowledged events missing from it, rows it holds
    more than once, rows of events never acknowledged)."""
    rows = settle_sink(url, acked)
    return acked - set(rows), sum(n - 1 for n in rows.values() if n > 1), len(set(rows) - acked)


def sink_counts(url: str) -> Counter[tuple[str, int]]:
    db = sa.create_engine(url)
    try:
        with db.connect() as conn:
            if not sa.inspect(conn).has_table("plan_rows"):
                return Counter()
            return Counter(
                (str(p), int(s)) for p, s in conn.execute(sa.text("SELECT plan, seq FROM plan_rows"))
            )
    finally:
        db.dispose()


class ManyFeeders:
    """`clients` threads, each sending bundles of `bundle` events to the plans in turn (its own
    share of them), `pause` s apart; `acked` holds every (plan, seq) a member acknowledged."""

    def __init__(
        self, nodes: list[NodeProcess], plans: int, clients: int, bundle: int = 4, pause: float = 0.02
    ) -> None:
        self.nodes = nodes
        self.plans = plans
        self.bundle = bundle
        self.pause = pause
        self.acked: set[tuple[str, int]] = set()
        self.resent = 0
        self.errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(c, clients), daemon=True, name=f"feeder-{c}")
            for c in range(clients)
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> int:
        self._stop.set()
        for thread in self._threads:
            thread.join(60)
        if self.errors:
            raise self.errors[0]
        return len(self.acked)

    def _client(self, node: NodeProcess) -> DataBridgeClient:
        client = DataBridgeClient(
            f"tcp://{node.host}:{node.thrift_port}",
            f"ssl://{node.host}:{node.tls_port}",
            username="admin",
            password=ADMIN_PASSWORD,
            bundle_size=self.bundle,
            ca_file=str(node.certificate),
        )
        for i in range(self.plans):
            client.add_definition(
                parse_definition(
                    f'{{"name": "s{i:03d}", "version": "1.0.0", "payloadData": [{{"name": "seq", "type": "LONG"}}]}}'
                )
            )
        client.connect()
        return client

    def _run(self, me: int, clients: int) -> None:
        mine = [i for i in range(self.plans) if i % clients == me]
        seqs = dict.fromkeys(mine, 0)
        member = me % len(self.nodes)
        client: DataBridgeClient | None = None
        rng = random.Random(me)
        try:
            while not self._stop.is_set():
                for plan in mine:
                    if self._stop.is_set():
                        break
                    first = seqs[plan]
                    events = [
                        WireEvent(f"s{plan:03d}:1.0.0", int(time.time() * 1000), payload=(first + k,))
                        for k in range(self.bundle)
                    ]
                    deadline = time.monotonic() + 60  # a bundle is sent until acknowledged, stop or not
                    while True:
                        try:
                            if client is None:
                                client = self._client(self.nodes[member])
                            client.publish(events)
                            break
                        except (TransportError, ConnectionClosed, RemoteApplicationError, OSError):
                            if client is not None:
                                client.abandon()
                            client = None
                            if time.monotonic() > deadline:
                                raise
                            self.resent += 1
                            member = (member + 1) % len(self.nodes)
                            time.sleep(0.05 + rng.random() * 0.05)
                    with self._lock:
                        self.acked.update((name(plan), first + k) for k in range(self.bundle))
                    seqs[plan] = first + self.bundle
                    time.sleep(self.pause)
        except BaseException as exc:
            self.errors.append(exc)
        finally:
            if client is not None:
                client.close()


class LeaseSampler:
    """Reads every lease's time left from the registry every 100 ms in a thread."""

    def __init__(self, url: str) -> None:
        self.db = sa.create_engine(url)
        self.lowest: list[tuple[float, int]] = []  # (when, the least time left of any held lease)
        self.epochs: dict[str, set[int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        query = sa.text(
            "SELECT plan, epoch, expires_ms - CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) FROM cep_leases"
        )
        while not self._stop.wait(0.1):
            try:
                with self.db.connect() as conn:
                    rows = conn.execute(query).all()
            except sa.exc.DBAPIError:
                continue  # a sample missed: the next one counts
            for plan, epoch, _ in rows:
                self.epochs.setdefault(plan, set()).add(int(epoch))
            held = [int(left) for _, _, left in rows if int(left) > RELEASED_LONG_AGO]
            if held:
                self.lowest.append((time.monotonic(), min(held)))

    def first(self, timeout: float = 10.0) -> None:
        """Return once a first sample is in (what a test compares later samples with)."""
        deadline = time.monotonic() + timeout
        while not self.lowest:
            if time.monotonic() > deadline:
                msg = "no lease read from the registry"
                raise AssertionError(msg)
            time.sleep(0.05)

    def least(self, since: float, until: float) -> int:
        return min(left for at, left in self.lowest if since <= at <= until)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.db.dispose()
