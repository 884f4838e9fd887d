"""The disk of a node's data directory full: a tmpfs of a few MB of the test's own, filled
with a file while a client sends readings to a real `cepheus server` running the rooms plan
in persistence mode (its input log on that disk, MariaDB registry and sink).

While the disk is full the node takes no bundle (the plan's input log cannot hold it): the
client is refused (the same retryable refusal as backpressure: WSO2's clients and Cepheus'
own send the bundle again), no bundle is acknowledged, the node keeps running, says once
(not per bundle) that the disk is full and shows it in `/health/details`
(`input_log_faults`, with the path). Once the filler is deleted the node takes bundles
again without a restart, and the sink ends exactly as one uninterrupted run's outputs for
every acknowledged reading. A node killed (-9) while its disk is full restarts on what it
acknowledged. A snapshot that the full disk cannot store (an SQLite registry on it) leaves
the older ones as they were.

A disk that hangs (no device-mapper delay target in this kernel, so a delay injected behind the
log's `fdatasync`, in a node in this process): the bundle whose flush hangs is not
acknowledged until it ends, those that come meanwhile are refused once it has run for
`STALL_SECONDS`, `/health/details` shows how long it has run, and all goes on when it ends.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import engine
from adapters.thrift.errors import ConnectionClosed, RemoteApplicationError, TransportError
from app.persistence.errors import DiskFault
from app.persistence.input_log import STALL_SECONDS
from app.persistence.snapshot_keeper import SnapshotKeeper
from app.registry import ExecutionPlan, Registry
from app.registry.snapshots import RegistrySnapshots
from tests.support.databases import isolated_database
from tests.support.disks import fill, free, small_disk
from tests.support.nodes import NodeProcess, node_config, running_node, toml_config, wait_for
from tests.support.nodes import provision as provision_registry
from tests.support.rooms import BUNDLE, Feeder, Reading, assert_exact, batch_count, provision, readings

pytestmark = [pytest.mark.mysql, pytest.mark.slow]

FULL_SECONDS = 2.0  # how long the test watches that nothing is acknowledged on a full disk


class Client(threading.Thread):
    """Sends bundles one at a time, each again until it is acknowledged, as WSO2's clients do;
    keeps the refusals' messages."""

    def __init__(self, node: NodeProcess, plan_input: list[Reading], base: int) -> None:
        super().__init__(daemon=True)
        self.node, self.plan_input, self.base = node, plan_input, base
        self.sent = self.refused = 0
        self.refusals: list[str] = []
        self._halt = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        feeder: Feeder | None = None
        try:
            while not self._halt.is_set() and self.sent + BUNDLE <= len(self.plan_input):
                bundle = self.plan_input[self.sent : self.sent + BUNDLE]
                while not self._halt.is_set():
                    try:
                        feeder = feeder or Feeder(self.node, self.base)
                        feeder.send(bundle, pause=0)
                    except (RemoteApplicationError, TransportError, ConnectionClosed, OSError) as exc:
                        self.refused += 1
                        if len(self.refusals) < 20:
                            self.refusals.append(str(exc))
                        if feeder is not None:
                            feeder.client.abandon()
                        feeder = None
                        time.sleep(0.02)
                        continue
                    self.sent += BUNDLE
                    break
                time.sleep(0.003)
            if feeder is not None:
                feeder.close()
        except BaseException as exc:
            self.error = exc

    def stop(self) -> int:
        self._halt.set()
        self.join(60)
        if self.error is not None:
            raise self.error
        return self.sent


@pytest.fixture
def databases(mysql_url: str) -> Iterator[tuple[str, str]]:
    with (
        isolated_database(mysql_url, "cep_disk") as registry,
        isolated_database(mysql_url, "cep_disk_sink") as sink,
    ):
        yield registry, sink


def rooms_node(tmp: Path, registry: str, sink: str, fsync: str) -> NodeProcess:
    (tmp / "a").mkdir()
    (tmp / "doc").mkdir()
    node = NodeProcess(tmp / "a", registry)
    node.sections["adapters"]["full_wait_ms"] = 200
    node.sections["persistence"] = {"fsync": fsync}
    node.config_path.write_text(toml_config(node.sections), encoding="utf-8")
    provision(node, tmp / "doc", sink)
    return node


def faults(node: NodeProcess) -> dict[str, dict[str, object]]:
    found: dict[str, dict[str, object]] = node.health()["input_log_faults"]
    return found


def refused_for_a_full_disk(node: NodeProcess, client: Client, disk: Path) -> int:
    """Wait until the node says the disk is full and refuses the client; check that nothing is
    acknowledged for `FULL_SECONDS`; the readings acknowledged by then."""
    fault = wait_for(lambda: faults(node).get("rooms"), 30, "the disk fault in /health/details")
    assert "No space left on device" in str(fault["error"]), fault
    assert str(fault["path"]).startswith(str(disk / "input-log" / "rooms")), fault
    assert fault["restart_needed"] is False, fault
    refused = client.refused
    wait_for(lambda: client.refused >= refused + 3, 30, "the client refused")
    stalled = client.sent
    time.sleep(FULL_SECONDS)
    assert client.sent == stalled, f"{client.sent - stalled} readings acknowledged on a full disk"
    assert node.process is not None and node.process.poll() is None, node.log()[-3000:]
    assert node.health()["plans"]["rooms"]["state"] == "running"
    assert any("No space left on device" in m for m in client.refusals), client.refusals
    return stalled


def settle(node: NodeProcess, client: Client, sink: str) -> int:
    """Stop the client; wait until the sink counts every reading it sent; how many."""
    sent = client.stop()
    time.sleep(0.5)  # the last time batch closes 300 ms after it opened
    wait_for(lambda: batch_count(sink) >= sent, 30, "every reading in a time batch")
    return sent


@pytest.mark.parametrize("fsync", ["always", "interval"])
def test_a_full_disk_stops_acknowledgements_and_they_resume_without_a_restart_once_there_is_room(
    tmp_path: Path, databases: tuple[str, str], fsync: str
) -> None:
    registry, sink = databases
    plan_input = readings(11, 100_000)
    base = int(time.time() * 1000) + 86_400_000
    node = rooms_node(tmp_path, registry, sink, fsync)
    client = Client(node, plan_input, base)
    with small_disk(Path(node.sections["node"]["data_dir"])) as disk:
        try:
            node.start()
            client.start()
            wait_for(lambda: client.sent >= 400, 30, "readings acknowledged")
            fill(disk)
            stalled = refused_for_a_full_disk(node, client, disk)
            free(disk)
            wait_for(lambda: client.sent >= stalled + 400, 30, "acknowledgements once there is room")
            wait_for(lambda: not faults(node), 10, "the fault to be over in /health/details")
            sent = settle(node, client, sink)
        finally:
            client.stop()
            node.stop()
    assert_exact(sink, plan_input[:sent], base, f"fsync {fsync}, {sent} readings")
    server_log = node.log()
    assert "Traceback" not in server_log
    # said once, and once per 10 s while it lasts (the input log's line, the receiver's): not per bundle
    assert server_log.count("No space left on device") <= 4, server_log[-5000:]
    assert "input log of plan 'rooms' takes appends again" in server_log


def test_a_node_killed_while_its_disk_is_full_restarts_on_what_it_acknowledged(
    tmp_path: Path, databases: tuple[str, str]
) -> None:
    registry, sink = databases
    plan_input = readings(12, 100_000)
    base = int(time.time() * 1000) + 86_400_000
    node = rooms_node(tmp_path, registry, sink, "always")
    client = Client(node, plan_input, base)
    with small_disk(Path(node.sections["node"]["data_dir"])) as disk:
        try:
            node.start()
            client.start()
            wait_for(lambda: client.sent >= 400, 30, "readings acknowledged")
            fill(disk)
            stalled = refused_for_a_full_disk(node, client, disk)
            node.kill()
            free(disk)
            node.start()
            wait_for(lambda: client.sent >= stalled + 400, 30, "acknowledgements after the restart")
            sent = settle(node, client, sink)
        finally:
            client.stop()
            node.stop()
    assert_exact(sink, plan_input[:sent], base, f"{sent} readings")
    assert "cut a torn tail" not in node.log()  # nothing of a refused bundle stayed in the log


STATE = """
@app:name('big')
define stream In (k string, v string);
define table Kept (k string, v string);
from In select k, v update or insert into Kept on Kept.k == k;
"""


def test_a_snapshot_the_full_disk_cannot_store_leaves_the_last_good_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    plan = ExecutionPlan("big", STATE, snapshot_interval_minutes=1).checked()
    runtime = engine.compile(STATE)
    runtime.send("In", [(f"k{i}", "x" * 100) for i in range(100)], timestamps=1000)
    with small_disk(tmp_path / "disk") as disk:
        registry = Registry(f"sqlite:///{disk / 'cepheus.db'}")
        try:
            registry.migrate()
            store = RegistrySnapshots(registry)
            keeper = SnapshotKeeper(store, "node-a", keep=3, deployed=lambda: [(plan, runtime)])
            good = keeper.take(plan, runtime)
            runtime.send("In", [(f"k{i}", "y" * 1000) for i in range(3000)], timestamps=2000)
            fill(disk)
            keeper.checkpoint(plan, runtime)  # fails, logged: it must not raise
            assert "plan big: snapshot failed" in caplog.text and "disk is full" in caplog.text
            assert [m.id for m in store.list("big")] == [good.id]
            restored = engine.compile(STATE)
            assert keeper.restore(plan, restored).meta == good  # the last good one still loads
            free(disk)
            second = keeper.take(plan, runtime)
            assert [m.id for m in store.list("big")] == [second.id, good.id]
        finally:
            registry.close()


SUMS = """
@Import('nums:1.0.0') define stream In (v long);
@Export('sums:1.0.0') define stream Sums (total long);
@info(name='sums') from In#window.length(3) select sum(v) as total insert into Sums;
"""

SUMS_DOCUMENT = """
[[streams]]
name = "nums"
payload = [{ name = "v", type = "LONG" }]

[[streams]]
name = "sums"
payload = [{ name = "total", type = "LONG" }]

[[plans]]
name = "summing"
file = "summing.siddhi"
snapshot_interval_minutes = 10
"""


def test_a_flush_that_hangs_holds_its_acknowledgement_and_refuses_what_comes_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = f"sqlite:///{tmp_path / 'registry.db'}"
    provision_registry(registry, SUMS_DOCUMENT, tmp_path, {"summing.siddhi": SUMS})
    real = os.fdatasync
    hang, release, hanging = threading.Event(), threading.Event(), threading.Event()

    def fdatasync(fd: int) -> None:
        if hang.is_set() and "input-log" in os.readlink(f"/proc/self/fd/{fd}"):
            hanging.set()
            release.wait(60)
        real(fd)

    monkeypatch.setattr(os, "fdatasync", fdatasync)
    with running_node(node_config(tmp_path, registry, persistence={"fsync": "always"})) as node:
        node.ingress.publish_rows("nums:1.0.0", [(1,)])
        hang.set()
        acknowledged: list[int] = []

        def publish() -> None:
            node.ingress.publish_rows("nums:1.0.0", [(2,)])
            acknowledged.append(2)

        first = threading.Thread(target=publish)
        first.start()
        try:
            assert hanging.wait(10)
            time.sleep(STALL_SECONDS + 0.3)
            assert acknowledged == []  # its record is not on disk yet
            with pytest.raises(DiskFault, match="a flush has not finished for"):
                node.ingress.publish_rows("nums:1.0.0", [(3,)])
            fault = node.health()["input_log_faults"]["summing"]
            assert fault["flushing_seconds"] > STALL_SECONDS and "a flush has not finished" in fault["error"]
        finally:
            hang.clear()
            release.set()
            first.join(10)
        assert acknowledged == [2]
        node.ingress.publish_rows("nums:1.0.0", [(3,)])
        wait_for(lambda: not node.health()["input_log_faults"], 5, "the fault to be over")
