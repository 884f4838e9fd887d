"""Exactly once across a forwarding chain: two real `cepheus server` members run the rooms plan
redundantly (failover mode, MariaDB registry) and send its outputs over Thrift (the wso2event
adapter) to a third, downstream node whose plan writes every event it receives to MariaDB.

While a client feeds readings, the notifier is killed (SIGKILL), paused past its lease
(SIGSTOP, then SIGCONT) and has the heartbeat connection it keeps to the standby closed in
order while it lives (FIN, as after an error in its sender); after each fault the victim comes
back as a standby. Every upstream output must land downstream exactly once: the new notifier
sends again what it cannot know was delivered, the old one sends nothing more once its lease
is gone (its fence is asked before each bundle), and the downstream node takes each event once
by its origin (`adapters.senders`). The heartbeat FIN must change no role.

`CEPHEUS_FORWARD_FAULTS` = "kills,pauses,fins" (default "3,1,2"; `make ha-faults` runs 20,5,5).
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cluster import plan_status
from tests.support.databases import isolated_database
from tests.support.faults import Rig, wait_until
from tests.support.nodes import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.ha, pytest.mark.mysql]

KILLS, PAUSES, FINS = (int(n) for n in os.environ.get("CEPHEUS_FORWARD_FAULTS", "3,1,2").split(","))
LEASE = 2.0  # conf/cepheus.toml's [ha] lease_ms


@pytest.fixture
def rig(tmp_path: Path, mysql_url: str) -> Iterator[Rig]:
    with (
        isolated_database(mysql_url, "cep_fw") as registry,
        isolated_database(mysql_url, "cep_fw_down") as downstream,
        isolated_database(mysql_url, "cep_fw_sink") as sink,
    ):
        rig = Rig(tmp_path, registry, sink, "failover", downstream_registry=downstream)
        try:
            yield rig
        finally:
            rig.close()


def test_every_output_reaches_the_downstream_node_once_through_kills_pauses_and_closed_heartbeats(
    rig: Rig, capsys: pytest.CaptureFixture[str]
) -> None:
    faults = ["kill"] * KILLS + ["pause"] * PAUSES + ["fin"] * FINS
    rng = random.Random(rig.seed)
    rng.shuffle(faults)
    notifier, _ = rig.start()
    watch = rig.watch
    assert watch is not None and rig.downstream is not None
    feeder = rig.feed(notifier)
    takeovers: dict[str, list[float]] = {"kill": [], "pause": []}
    fin_changes: list[str] = []
    for fault in faults:
        time.sleep(rng.uniform(0.3, 1.0))
        victim, survivor = rig.steady(30)
        hit = time.monotonic()
        if fault == "fin":
            closed = rig.cluster_proxies[rig.nodes.index(survivor)].fin()  # the victim's link to it, in order
            time.sleep(2 * LEASE)
            fin_changes += [f"{who} {role}" for _, who, role in watch.changes(hit)]
            assert closed, "no cluster connection to close"
            continue
        process = victim.process
        assert process is not None
        if fault == "kill":
            victim.kill()
        else:
            process.send_signal(signal.SIGSTOP)
        try:
            took = wait_until(lambda s=survivor: plan_status(s).get("role") == "notifier", 10)
            if fault == "pause":
                time.sleep(max(0.0, 2 * LEASE - (time.monotonic() - hit)))
        finally:
            if fault == "pause":
                process.send_signal(signal.SIGCONT)
        assert took is not None, f"no takeover after the {fault}: {rig.statuses()}"
        takeovers[fault].append(took)
        if fault == "kill":
            victim.start()
        else:
            wait_for(
                lambda v=victim: plan_status(v).get("role") == "standby",
                10,
                "the paused notifier to step down",
            )
    sent = rig.finish()
    received = rig.downstream.received()
    with capsys.disabled():
        print(
            f"\n[forwarding to a downstream node] {KILLS} kill -9, {PAUSES} SIGSTOP past the lease, "
            f"{FINS} heartbeat FIN: takeover after kill {_ms(takeovers['kill'])}, after SIGSTOP "
            f"{_ms(takeovers['pause'])}; role changes after a FIN: {fin_changes or 'none'}; "
            f"downstream received {received} events (resent ones included); client bundles resent "
            f"{feeder.resent}; {rig.where(sent)}"
        )
    rig.check(sent)
    assert not fin_changes, f"a closed heartbeat connection deposed a live notifier: {fin_changes}"


def _ms(seconds: list[float]) -> str:
    if not seconds:
        return "-"
    ms = sorted(s * 1000 for s in seconds)
    return f"p50 {ms[len(ms) // 2]:.0f} ms, max {ms[-1]:.0f} ms"
