"""A sink outage far longer than the adapter's buffer, on one real `cepheus server`: the node
pushes back on its client instead of dropping outputs, and the sink ends exact.

The rooms plan (about 2.5 outputs per reading) writes to MariaDB through a proxy the test
cuts for five seconds while a client sends readings as fast as they are acknowledged; the
adapter holds 300 records, a twentieth of what the outage's outputs would need. The client
retries every refused bundle (as WSO2's publishers and Cepheus' own do). Afterwards the sink
must hold exactly one uninterrupted run's outputs for every acknowledged reading, the node
must have refused bundles while the sink was away, and the adapter must never have held much
more than its bound. The figures (refusals, longest wait for an acknowledgement, the
adapter's peak, the node's peak memory) are printed. `make outage` runs it with a 60 s outage.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from adapters.thrift.errors import ConnectionClosed, RemoteApplicationError, TransportError
from tests.support.databases import isolated_database
from tests.support.nodes import NodeProcess, toml_config, wait_for
from tests.support.proxy import Proxy, proxied, target_of
from tests.support.rooms import (
    BUNDLE,
    Feeder,
    Reading,
    assert_exact,
    batch_count,
    provision,
    readings,
    sink_rows,
)

pytestmark = [pytest.mark.mysql, pytest.mark.slow]

BUFFER = 300
OUTAGE = float(os.environ.get("CEPHEUS_OUTAGE_SECONDS", "5"))  # `make outage` runs 60


class RetryingClient(threading.Thread):
    """Sends bundles one at a time, each again until it is acknowledged."""

    def __init__(self, node: NodeProcess, plan_input: list[Reading], base: int) -> None:
        super().__init__(daemon=True)
        self.node, self.plan_input, self.base = node, plan_input, base
        self.sent = self.refused = 0
        self.longest = 0.0  # seconds from a bundle's first attempt to its acknowledgement
        self.stop_at = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            feeder: Feeder | None = None
            while not self.stop_at.is_set() and self.sent + BUNDLE <= len(self.plan_input):
                bundle = self.plan_input[self.sent : self.sent + BUNDLE]
                first = time.monotonic()
                while True:
                    try:
                        feeder = feeder or Feeder(self.node, self.base)
                        feeder.send(bundle, pause=0)
                        break
                    except (RemoteApplicationError, TransportError, ConnectionClosed, OSError):
                        self.refused += 1
                        if feeder is not None:
                            feeder.client.abandon()
                        feeder = None
                        time.sleep(0.05)
                self.longest = max(self.longest, time.monotonic() - first)
                self.sent += BUNDLE
                time.sleep(0.002)
            if feeder is not None:
                feeder.close()
        except BaseException as exc:
            self.error = exc


def test_a_sink_outage_longer_than_the_buffer_slows_the_client_and_loses_nothing(
    tmp_path: Path, mysql_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    plan_input = readings(7, 200_000)
    base = int(time.time() * 1000) + 86_400_000
    with (
        isolated_database(mysql_url, "cep_outage") as registry,
        isolated_database(mysql_url, "cep_outage_sink") as sink,
    ):
        proxy = Proxy(target_of(sink), "sink")
        (tmp_path / "a").mkdir()
        (tmp_path / "doc").mkdir()
        node = NodeProcess(tmp_path / "a", registry)
        node.sections["adapters"]["full_wait_ms"] = 200
        node.config_path.write_text(toml_config(node.sections), encoding="utf-8")
        provision(node, tmp_path / "doc", proxied(sink, proxy), buffer_events=BUFFER)
        peak = [0]
        watching = threading.Event()

        def watch() -> None:
            while not watching.is_set():
                try:
                    peak[0] = max(peak[0], node.health()["adapters"]["outTable"]["pending"])
                except (OSError, KeyError, ValueError):
                    pass
                time.sleep(0.05)

        watcher = threading.Thread(target=watch, daemon=True)
        try:
            node.start()
            client = RetryingClient(node, plan_input, base)
            client.start()
            watcher.start()
            time.sleep(1.0)
            refused_before = client.refused
            rows_before, sent_before, at = len(sink_rows(sink)), client.sent, time.monotonic()
            time.sleep(1.0)
            load = (len(sink_rows(sink)) - rows_before, client.sent - sent_before, time.monotonic() - at)
            proxy.cut()
            time.sleep(OUTAGE)
            proxy.heal()
            time.sleep(2.0)
            client.stop_at.set()
            client.join(60)
            assert client.error is None, client.error
            time.sleep(0.5)  # the last time batch closes 300 ms after it opened
            wait_for(lambda: batch_count(sink) >= client.sent, 30, "every reading in a time batch")
            pushed_back = node.health()["pushed_back"]
            peak_rss = node.peak_memory_mib()
        finally:
            watching.set()
            node.stop()
            proxy.close()
        with capsys.disabled():
            print(
                f"\n[sink down {OUTAGE:.0f} s, adapter buffer {BUFFER}] load before it: {load[1] / load[2]:,.0f} "
                f"readings/s, {load[0] / load[2]:,.0f} rows/s into the sink; {client.sent} readings acknowledged; "
                f"bundles refused and resent {client.refused - refused_before} ({pushed_back} events pushed "
                f"back); longest wait for an acknowledgement {client.longest:.1f} s; the adapter held at "
                f"most {peak[0]} records; the node's peak memory {peak_rss:.0f} MiB"
            )
        assert_exact(sink, plan_input[: client.sent], base, f"{client.sent} readings")
        assert client.refused > refused_before and pushed_back > 0, "the client was never pushed back"
        assert BUFFER <= peak[0] < BUFFER + 200, f"the adapter held {peak[0]} records"
