"""One ordered input per plan, on real loopback sockets: a standby that joins a running notifier
from its snapshot and then follows its records computes exactly the notifier's outputs (time
windows, time batches and `within` patterns included, whatever its own wall clock says), keeps
the notifier's log, and when it takes over carries on as if one process had run it all."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from adapters.output.base import Origin
from app.cluster import replication
from app.cluster.errors import StateDoesNotFit
from app.cluster.gate import LockedGate
from app.cluster.peers import Connection, PeerServer, connect
from app.cluster.replication import Follower, Sequencer
from app.persistence.records import Events, encode
from engine.events import Event
from ha.messages import CarriedOutput, Live, Resume, State, Subscribe
from ha.ports import LogPosition
from tests.support.journals import OPS, Run, Wall

SECRET = b"sixteen-or-more-characters"


def no_outputs(*_: Any) -> None:
    """The runs collect their outputs themselves; the gates are only asked to release them."""


def wait(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def caught_up(standby: Run, notifier: Run) -> bool:
    """Whether the standby ran every record the notifier appended: read under its journal's lock,
    under which a record is appended and run (its position moves before the run)."""
    with standby.journal.lock:
        return standby.journal.position == notifier.journal.position


def subscribed(sequencer: Sequencer, standby: Run) -> tuple[PeerServer, Follower]:
    """A notifier's server for `sequencer` and `standby`'s follower of it (not started)."""

    def serve(connection: Connection) -> None:
        request = connection.recv()
        assert isinstance(request, Subscribe)
        sequencer.serve(connection, request)

    server = PeerServer("127.0.0.1", 0, "a", SECRET, serve)
    server.start()
    standby.journal.follow(None)
    follower = Follower(
        standby.journal,
        LockedGate("p", no_outputs),
        notifier=lambda: (f"127.0.0.1:{server.port}", None),
        connect=lambda address: connect(address, "b", "replicate", SECRET),
        install=standby.runtime.restore,
    )
    return server, follower


def notifying(tmp_path: Path) -> tuple[Run, Sequencer]:
    """A notifier that sequenced the first four operations."""
    notifier = Run(tmp_path / "a", Wall(OPS[0][0]))
    sequencer = Sequencer(notifier.journal, LockedGate("p", no_outputs))
    notifier.journal.lead(1, sequencer)
    notifier.do(OPS[:4])
    return notifier, sequencer


def follower_of(
    standby: Run,
    notifier: Callable[[], str],
    install: Callable[[bytes], Any] | None = None,
    ended: Callable[[], object] = lambda: None,
) -> Follower:
    """`standby`'s follower of the notifier at `notifier()` (not started)."""
    standby.journal.follow(None)
    return Follower(
        standby.journal,
        LockedGate("p", no_outputs),
        notifier=lambda: (notifier(), None),
        connect=lambda address: connect(address, "b", "replicate", SECRET),
        install=install or standby.runtime.restore,
        ended=ended,
    )


def test_a_standby_joined_from_a_snapshot_computes_what_the_notifier_does_and_takes_over(
    tmp_path: Path,
) -> None:
    whole = Run(tmp_path / "whole")
    whole.do(OPS)

    notifier = Run(tmp_path / "a", Wall(OPS[0][0]))
    sequencer = Sequencer(notifier.journal, LockedGate("p", no_outputs))
    notifier.journal.lead(1, sequencer)
    join = 6
    notifier.do(OPS[:join])

    standby = Run(tmp_path / "b", Wall(10**12))  # its own wall clock must never count
    server, follower = subscribed(sequencer, standby)
    try:
        follower.start()
        wait(lambda: follower.live, "the standby to join")
        assert standby.journal.log_id == notifier.journal.log_id
        emitted_at_join = len(notifier.out)
        takeover = len(OPS) - 4
        notifier.do(OPS[join:takeover])
        wait(lambda: caught_up(standby, notifier), "the standby to catch up")
        assert standby.out == notifier.out[emitted_at_join:]
        assert standby.log.bounds("p")[1] == notifier.log.bounds("p")[1]
    finally:
        follower.stop()
        server.stop()
    # the notifier dies; the standby, with everything it acknowledged, leads from here, on its
    # wall clock from now on
    standby.wall.now = OPS[takeover - 1][0]
    standby.journal.lead(2, None)
    standby.do(OPS[takeover:])
    assert notifier.out[:emitted_at_join] + standby.out == whole.out


def test_a_standby_that_lost_its_connection_resumes_where_it_was(tmp_path: Path) -> None:
    notifier, sequencer = notifying(tmp_path)
    connections: list[Connection] = []

    def serve(connection: Connection) -> None:
        connections.append(connection)
        request = connection.recv()
        assert isinstance(request, Subscribe)
        sequencer.serve(connection, request)

    server = PeerServer("127.0.0.1", 0, "a", SECRET, serve)
    server.start()
    standby = Run(tmp_path / "b", Wall(10**12))
    installs: list[int] = []

    def install(blob: bytes) -> None:
        installs.append(len(blob))
        standby.runtime.restore(blob)

    follower = follower_of(standby, lambda: f"127.0.0.1:{server.port}", install)
    try:
        follower.start()
        wait(lambda: follower.live, "the standby to join")
        connections[-1].close()  # the network drops the subscription
        wait(lambda: len(connections) == 2 and follower.live, "the standby to resume")
        notifier.do(OPS[4:])
        wait(lambda: caught_up(standby, notifier), "the standby to catch up")
        assert len(installs) == 1  # resumed from its own log: no second snapshot
    finally:
        follower.stop()
        server.stop()


def test_a_standby_whose_notifier_died_stays_eligible_while_it_cannot_reconnect(tmp_path: Path) -> None:
    """Its live subscription ended: it holds everything the notifier acknowledged. Its attempts to
    subscribe again (refused: nothing listens there any more) must not cost it that, or no member
    could take the dead notifier's place. The end is reported once (the member then reads who
    holds the lease at once), the failed attempts are not."""
    notifier, sequencer = notifying(tmp_path)
    connections: list[Connection] = []

    def serve(connection: Connection) -> None:
        connections.append(connection)
        request = connection.recv()
        assert isinstance(request, Subscribe)
        sequencer.serve(connection, request)

    server = PeerServer("127.0.0.1", 0, "a", SECRET, serve)
    server.start()
    address = f"127.0.0.1:{server.port}"
    asked: list[str] = []

    def where() -> str:
        asked.append(address)
        return address

    ended: list[float] = []
    follower = follower_of(
        Run(tmp_path / "b", Wall(10**12)), where, ended=lambda: ended.append(time.monotonic())
    )
    try:
        follower.start()
        wait(lambda: follower.live, "the standby to join")
        sequencer.delivered(notifier.journal.position)  # the outputs it holds none of are written
        wait(lambda: follower.caught_up, "the standby to hold what a takeover needs")
        assert ended == []
        server.stop()
        sequencer.close()  # the notifier's process is gone: its connections close
        for connection in connections:
            connection.close()
        wait(lambda: not follower.live, "the subscription to end")
        tried = len(asked)
        wait(lambda: len(asked) >= tried + 3, "attempts to subscribe again")
        assert follower.caught_up
        assert len(ended) == 1
    finally:
        follower.stop()


def test_a_live_standby_keeps_a_quiet_notifier_and_leaves_a_silent_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A notifier with nothing to send says it lives; one whose host vanished without FIN or
    RST says nothing, and its live standby must end the subscription (and stay eligible), not
    wait on the dead connection for as long as TCP would."""
    monkeypatch.setattr(replication, "KEEPALIVE_SECONDS", 0.05)
    monkeypatch.setattr(replication, "FOLLOW_SILENCE_SECONDS", 1.0)
    notifier, sequencer = notifying(tmp_path)
    silent, released = threading.Event(), threading.Event()
    connections: list[Connection] = []

    def serve(connection: Connection) -> None:
        connections.append(connection)
        request = connection.recv()
        assert isinstance(request, Subscribe)
        if silent.is_set():  # the vanished host: the connection stays open, nothing comes
            connection.send(Resume(notifier.journal.log_id, request.position, 1, 0))
            connection.send(Live())
            released.wait(30)
            return
        sequencer.serve(connection, request)

    server = PeerServer("127.0.0.1", 0, "a", SECRET, serve)
    server.start()
    ended: list[float] = []
    follower = follower_of(
        Run(tmp_path / "b", Wall(10**12)),
        lambda: f"127.0.0.1:{server.port}",
        ended=lambda: ended.append(time.monotonic()),
    )
    try:
        follower.start()
        wait(lambda: follower.live, "the standby to join")
        time.sleep(2.5)  # two and a half silences with nothing to send (keepalives every 0.05 s)
        assert follower.live and ended == [] and len(connections) == 1, "a quiet notifier was left"
        silent.set()
        connections[0].close()  # the standby subscribes again, to the silent one
        wait(lambda: len(ended) == 1 and len(connections) == 2 and follower.live, "the silent stream")
        wait(lambda: len(ended) == 2, "the standby to leave the silent notifier")
        assert follower.ended_live, "a standby that left a live stream holds what the notifier acknowledged"
    finally:
        released.set()
        follower.stop()
        server.stop()


def test_a_join_whose_notifier_was_deposed_is_left_for_the_new_one_at_once(tmp_path: Path) -> None:
    """A standby joining a notifier whose host vanished hears nothing (no FIN, no RST) until its
    join's silence deadline, 10 s. Once the lease names another member, it leaves that join
    (`leave_join`, from the node's round) and subscribes to the new notifier."""
    notifier, sequencer = notifying(tmp_path)
    server = serving(sequencer)
    subscribed, released = threading.Event(), threading.Event()

    def vanished(connection: Connection) -> None:  # accepts, reads the subscription, says nothing
        connection.recv()
        subscribed.set()
        released.wait(30)

    gone = PeerServer("127.0.0.1", 0, "a", SECRET, vanished)
    gone.start()
    target = [(f"127.0.0.1:{gone.port}", ("a", 1))]
    standby = Run(tmp_path / "b", Wall(10**12))
    standby.journal.follow(None)
    follower = Follower(
        standby.journal,
        LockedGate("p", no_outputs),
        notifier=lambda: target[0],
        connect=lambda address: connect(address, "b", "replicate", SECRET),
        install=standby.runtime.restore,
    )
    try:
        follower.start()
        wait(subscribed.is_set, "the standby to join the vanished notifier")
        assert follower.joined_under == ("a", 1)
        assert not follower.live
        target[0] = (f"127.0.0.1:{server.port}", ("c", 2))
        started = time.monotonic()
        follower.leave_join()
        wait(lambda: follower.live, "the standby to join the new notifier")
        assert time.monotonic() - started < replication.JOIN_SILENCE_SECONDS / 2
        assert follower.joined_under == ("c", 2)
        assert standby.journal.position == notifier.journal.position
    finally:
        released.set()
        follower.stop()
        gone.stop()
        server.stop()


def test_a_join_cut_before_every_carried_output_came_leaves_the_standby_as_it_was(tmp_path: Path) -> None:
    """A state announces its carried outputs: cut after the first of two, the standby installs
    nothing (its log, state and gate stay as they were); the next join installs it whole."""
    notifier, sequencer = notifying(tmp_path)
    state, _, position = notifier.journal.capture()
    torn, second, again = threading.Event(), threading.Event(), threading.Event()
    installed: list[bytes] = []

    def serve(connection: Connection) -> None:
        request = connection.recv()
        assert isinstance(request, Subscribe)
        if torn.is_set():
            second.set()  # the torn subscription has ended: the follower subscribes again
            again.wait(10)  # the test looks at the standby first
            sequencer.serve(connection, request)
            return
        torn.set()
        connection.send(
            State(
                notifier.journal.log_id, position, 1, notifier.journal.clock.now, (), 0, 0, 2, state.encode()
            )
        )
        out = Events("out:1.0.0", [20], [("y", 2.5)])
        connection.send(CarriedOutput(notifier.journal.log_id, position, 0, (), encode(out)))
        connection.close()  # the second carried output never comes

    server = PeerServer("127.0.0.1", 0, "a", SECRET, serve)
    server.start()
    standby = Run(tmp_path / "b", Wall(10**12))
    standby.journal.follow(None)
    own_log = standby.journal.log_id
    gate = LockedGate("p", no_outputs)
    follower = following(
        standby, server, gate, lambda blob: installed.append(blob) or standby.runtime.restore(blob)
    )
    try:
        follower.start()
        wait(second.is_set, "the torn join to end")
        assert installed == [] and standby.journal.log_id == own_log and gate.held == 0
        again.set()
        wait(lambda: follower.live, "the next join")
        assert len(installed) == 1 and standby.journal.log_id == notifier.journal.log_id
    finally:
        again.set()
        follower.stop()
        server.stop()


def test_a_follower_stopped_while_it_installs_a_state_says_so_until_its_thread_ended(tmp_path: Path) -> None:
    """A takeover must not start while the follower still writes into the log and state the
    new notifier would notify from: `stop` says whether its thread ended."""
    notifier, sequencer = notifying(tmp_path)
    server = serving(sequencer)
    standby = Run(tmp_path / "b", Wall(10**12))
    installing, finish = threading.Event(), threading.Event()

    def slow_install(blob: bytes) -> Any:  # a large state, or a stalled disk
        installing.set()
        finish.wait(30)
        return standby.runtime.restore(blob)

    standby.journal.follow(None)
    follower = following(standby, server, LockedGate("p", no_outputs), slow_install)
    try:
        follower.start()
        wait(installing.is_set, "the standby to install the notifier's state")
        assert follower.stop(wait=0.2) is False
        assert follower.stopping and not follower.ended
        finish.set()
        wait(lambda: follower.ended, "the follower's thread to end")
        assert not follower.stopping and follower.stop() is True
    finally:
        finish.set()
        follower.stop()
        server.stop()


def test_a_standby_joined_from_a_snapshot_gets_the_unwritten_outputs_and_may_take_over_at_once(
    tmp_path: Path,
) -> None:
    """The notifier sends what it has not seen written with the snapshot: the standby holds those
    outputs (same origins) and could take over without waiting for a report of what is written."""
    notifier = Run(tmp_path / "a", Wall(OPS[0][0]))
    notifier_gate = LockedGate("p", no_outputs)
    sequencer = Sequencer(notifier.journal, notifier_gate)
    notifier.journal.lead(1, sequencer)
    notifier.do(OPS[:4])
    log_id = notifier.journal.log_id
    written = Origin("p", log_id, 2, 0)
    unwritten = [Origin("p", log_id, 3, 0), Origin("p", log_id, 4, 1)]
    notifier_gate.hold("out:1.0.0", [Event(10, ("x", 1))], written)
    notifier_gate.hold(
        "out:1.0.0", [Event(20, ("y", 2.5)), Event(21, (None, -1), expired=True)], unwritten[0]
    )
    notifier_gate.hold("other:1.0.0", [Event(30, ("z", True))], unwritten[1])
    notifier_gate.trim(2)  # position 2's outputs are written

    def serve(connection: Connection) -> None:
        request = connection.recv()
        assert isinstance(request, Subscribe)
        sequencer.serve(connection, request)

    server = PeerServer("127.0.0.1", 0, "a", SECRET, serve)
    server.start()
    standby = Run(tmp_path / "b", Wall(10**12))
    standby.journal.follow(None)
    delivered: list[tuple[str, list[Event], Any]] = []
    standby_gate = LockedGate(
        "p", lambda stream, events, where, fence: delivered.append((stream, events, where))
    )
    follower = Follower(
        standby.journal,
        standby_gate,
        notifier=lambda: (f"127.0.0.1:{server.port}", None),
        connect=lambda address: connect(address, "b", "replicate", SECRET),
        install=standby.runtime.restore,
    )
    try:
        follower.start()
        wait(lambda: follower.live, "the standby to join")
        assert follower.caught_up  # no report of written outputs needed
        wait(lambda: sequencer.in_sync() == ["b"], "the ready ack")
    finally:
        follower.stop()
        server.stop()
    standby_gate.open(
        lambda transaction: None, standby.journal.position
    )  # it takes over: the unwritten outputs go out again
    assert [
        (s, [(e.timestamp, tuple(e.data), e.expired) for e in events], w) for s, events, w in delivered
    ] == [
        ("out:1.0.0", [(20, ("y", 2.5), False), (21, (None, -1), True)], unwritten[0]),
        ("other:1.0.0", [(30, ("z", True), False)], unwritten[1]),
    ]


def acknowledged(run: Run, ops: list[tuple[int, int | None]]) -> None:
    """Run `ops` as a receiver would: each bundle is acknowledged (settled) before the next."""
    for op in ops:
        run.do([op])
        if op[1] is not None:
            run.journal.durable(run.journal.position)


def test_the_notifier_makes_the_lease_require_what_a_standby_of_its_term_may_lack(tmp_path: Path) -> None:
    """A standby whose subscription ended counts itself able to take over (it cannot tell a drop
    from the notifier's death). So the notifier raises the lease's requirement before its term's
    first acknowledgement and before acknowledging a record such a standby may lack — and only
    then: while every standby of its term holds each record, the lease is left alone."""
    notifier = Run(tmp_path / "a", Wall(OPS[0][0]))
    required: list[LogPosition] = []

    def confirm(since: float, require: LogPosition) -> bool:
        required.append(require)
        return True

    sequencer = Sequencer(notifier.journal, LockedGate("p", no_outputs), confirm=confirm)
    notifier.journal.lead(4, sequencer)
    acknowledged(notifier, OPS[:1])
    assert required == [LogPosition(4, notifier.journal.position)]  # the term's first acknowledgement
    connections: list[Connection] = []

    def serve(connection: Connection) -> None:
        connections.append(connection)
        request = connection.recv()
        assert isinstance(request, Subscribe)
        sequencer.serve(connection, request)

    server = PeerServer("127.0.0.1", 0, "a", SECRET, serve)
    server.start()
    reachable = True
    standby = Run(tmp_path / "b", Wall(10**12))
    standby.journal.follow(None)
    follower = Follower(
        standby.journal,
        LockedGate("p", no_outputs),
        notifier=lambda: (f"127.0.0.1:{server.port}", None) if reachable else None,
        connect=lambda address: connect(address, "b", "replicate", SECRET),
        install=standby.runtime.restore,
    )
    try:
        follower.start()
        wait(lambda: follower.live, "the standby to join")
        wait(lambda: sequencer.in_sync() == ["b"], "the standby to be in sync")
        before = len(required)
        acknowledged(notifier, OPS[1:6])
        assert len(required) == before  # the standby held each record before it was acknowledged
        reachable = False
        connections[-1].close()  # the subscription ends: the standby cannot tell why
        wait(lambda: not follower.live and sequencer.in_sync() == [], "the subscription to end")
        assert follower.caught_up
        acknowledged(notifier, OPS[6:8])
        assert required[before:] == [
            LogPosition(4, p) for p in range(notifier.journal.position - 1, notifier.journal.position + 1)
        ]
        assert standby.journal.held().covers(required[-1]) is False  # the lease would refuse it
        reachable = True  # it subscribes again: resumed in the same term, it holds them
        wait(lambda: sequencer.in_sync() == ["b"], "the standby to resume")
        assert standby.journal.held() == LogPosition(4, notifier.journal.position)
        before = len(required)
        acknowledged(notifier, OPS[8:])
        assert len(required) == before
    finally:
        follower.stop()
        server.stop()


def serving(sequencer: Sequencer) -> PeerServer:
    """The notifier's cluster port, serving subscriptions to `sequencer` (started)."""

    def serve(connection: Connection) -> None:
        request = connection.recv()
        assert isinstance(request, Subscribe)
        sequencer.serve(connection, request)

    server = PeerServer("127.0.0.1", 0, "a", SECRET, serve)
    server.start()
    return server


def following(
    standby: Run, server: PeerServer, gate: LockedGate, install: Callable[[bytes], Any]
) -> Follower:
    """Standby `standby`'s subscription to the notifier at `server` (not started)."""
    return Follower(
        standby.journal,
        gate,
        notifier=lambda: (f"127.0.0.1:{server.port}", None),
        connect=lambda address: connect(address, "b", "replicate", SECRET),
        install=install,
    )


def test_a_standby_whose_plan_was_redeployed_takes_the_notifiers_state_once_both_run_the_new_text(
    tmp_path: Path,
) -> None:
    """Between the two members' redeploys the records ran through different texts: the standby
    subscribes again asking for a snapshot, is refused while the notifier still runs the old
    text, and stays able to take over meanwhile (it holds every record)."""
    notifier = Run(tmp_path / "a", Wall(OPS[0][0]))
    notifier.journal.deployed = "text-1"
    sequencer = Sequencer(notifier.journal, LockedGate("p", no_outputs))
    notifier.journal.lead(1, sequencer)
    notifier.do(OPS[:4])
    server = serving(sequencer)
    standby = Run(tmp_path / "b", Wall(10**12))
    standby.journal.deployed = "text-1"
    standby.journal.follow(None)
    installs: list[int] = []

    def install(blob: bytes) -> None:
        installs.append(len(blob))
        standby.runtime.restore(blob)

    gate = LockedGate("p", no_outputs)
    follower = following(standby, server, gate, install)
    try:
        follower.start()
        wait(lambda: follower.live, "the standby to join")
        sequencer.delivered(notifier.journal.position)
        wait(lambda: follower.caught_up, "the standby to hold what a takeover needs")
        assert len(installs) == 1
        standby.journal.deployed = "text-2"  # the standby's plan was redeployed first
        follower.resync()
        wait(lambda: not follower.live, "the subscription to end")
        time.sleep(0.3)  # it asks again and again: the notifier runs the old text
        assert not follower.live and len(installs) == 1
        assert follower.caught_up  # it still holds every record: it may take over meanwhile
        notifier.do(OPS[4:8])
        notifier.journal.deployed = "text-2"
        wait(lambda: follower.live, "the standby to join again")
        assert len(installs) == 2  # from a snapshot of the notifier's state, not resumed
        notifier.do(OPS[8:])
        wait(lambda: caught_up(standby, notifier), "the standby to catch up")
        assert standby.runtime.snapshot() == notifier.runtime.snapshot()
    finally:
        follower.stop()
        server.stop()


def test_a_standby_whose_state_does_not_fit_the_notifiers_is_not_eligible_and_asks_again_later(
    tmp_path: Path,
) -> None:
    """Members on different versions (a rolling upgrade that changed a state's shape): the
    standby cannot be a copy of the notifier, so it never counts itself able to take over, and
    it does not ask for the whole state again and again."""
    notifier = Run(tmp_path / "a", Wall(OPS[0][0]))
    sequencer = Sequencer(notifier.journal, LockedGate("p", no_outputs))
    notifier.journal.lead(1, sequencer)
    notifier.do(OPS[:4])
    server = serving(sequencer)
    standby = Run(tmp_path / "b", Wall(10**12))
    standby.journal.follow(None)
    attempts: list[float] = []

    def install(blob: bytes) -> None:
        attempts.append(time.monotonic())
        raise StateDoesNotFit("p", ["query 'sliding'"])

    follower = following(standby, server, LockedGate("p", no_outputs), install)
    try:
        follower.start()
        wait(lambda: len(attempts) == 1, "the standby to try the notifier's state")
        time.sleep(1.0)
        assert len(attempts) == 1
        assert not follower.live and not follower.caught_up
    finally:
        follower.stop()
        server.stop()


def test_under_fsync_always_a_standby_acknowledges_only_what_is_on_its_disk(tmp_path: Path) -> None:
    notifier = Run(tmp_path / "a", Wall(OPS[0][0]))
    sequencer = Sequencer(notifier.journal, LockedGate("p", no_outputs))
    notifier.journal.lead(1, sequencer)
    standby = Run(tmp_path / "b", Wall(10**12), fsync="always")
    on_disk_when_acknowledged: list[tuple[int, int]] = []
    acknowledged = sequencer._rule.acknowledged

    def watched(member: Any, position: int, ready: bool) -> None:
        on_disk_when_acknowledged.append((position, standby.log._plans["p"].synced))
        acknowledged(member, position, ready)

    sequencer._rule.acknowledged = watched  # type: ignore[method-assign]

    server, follower = subscribed(sequencer, standby)
    try:
        follower.start()
        wait(lambda: follower.live, "the standby to join")
        notifier.do(OPS)
        wait(
            lambda: (
                bool(on_disk_when_acknowledged)
                and on_disk_when_acknowledged[-1][0] == notifier.journal.position
            ),
            "the acknowledgements",
        )
    finally:
        follower.stop()
        server.stop()
    assert all(position <= synced for position, synced in on_disk_when_acknowledged), (
        on_disk_when_acknowledged
    )


def test_a_standby_acknowledges_a_record_once_appended_and_runs_it_even_if_that_fails(
    tmp_path: Path,
) -> None:
    notifier = Run(tmp_path / "a", Wall(OPS[0][0]))
    notifier.journal.lead(1, None)
    notifier.do(OPS[:3])
    payloads = list(notifier.log.read_payloads("p", 1))  # (both logs begin with the same first tick)
    standby = Run(tmp_path / "b", Wall(10**12))
    seen: list[tuple[int, int, int]] = []  # (position acknowledged, log's last, runs so far)

    def acknowledge(position: int) -> None:
        seen.append((position, standby.log.bounds("p")[1], len(standby.out)))
        raise ConnectionError("the notifier went away")

    standby.journal.follow(None)
    standby.journal.adopt(notifier.journal.log_id, 1, OPS[0][0], 1)
    for position, payload in payloads:
        with pytest.raises(ConnectionError):
            standby.journal.apply(position, payload, acknowledge)
    assert [(p, last) for p, last, _ in seen] == [(p, p) for p, _ in payloads]  # appended first
    assert [runs for _, _, runs in seen] == sorted(runs for _, _, runs in seen)
    assert standby.out == notifier.out  # each run all the same, after its acknowledgement failed
