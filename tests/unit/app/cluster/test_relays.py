"""A bundle a member relays again (its answer lost) gets the first attempt's answer; a notifier
that never answers holds up only its own plan's relays, and only until their deadline."""

from __future__ import annotations

import threading
import time

import pytest

from app.cluster import relays as relays_module
from app.cluster.peers import Connection, PeerServer
from app.cluster.relays import RelayMemory, Relays
from app.cluster.settings import ClusterSettings
from app.cluster.tls import ClusterKeys
from app.persistence.journal import NotLeading
from ha.lease import Timing
from ha.membership import Timeouts
from ha.messages import Ok, RelayedEvents

SECRET = b"sixteen-or-more-characters"


def test_a_bundle_relayed_again_gets_the_first_answer_and_is_not_processed_twice() -> None:
    relayed = RelayMemory(keep=2)
    token, _ = relayed.begin("b/x:1", 5)
    assert token
    answers: list[tuple[int, str | None]] = []
    again = threading.Thread(target=lambda: answers.append(relayed.begin("b/x:1", 5)))
    again.start()  # the repeat arrives while the first attempt is still being processed: it waits
    time.sleep(0.05)
    assert answers == []
    relayed.taken("b/x:1", token)
    again.join(5)
    assert answers == [(0, None)]  # taken: the repeat is answered ok, and not processed
    assert relayed.begin("b/x:1", 5) == (0, None)
    token, _ = relayed.begin("b/x:2", 5)
    relayed.refused("b/x:2", token)
    assert relayed.begin("b/x:2", 5)[0]  # a refused attempt is forgotten: the repeat is processed
    relayed.begin("b/x:3", 5)
    assert relayed.begin("b/x:1", 5)[0]  # past `keep`, the oldest ids are forgotten
    undecided = RelayMemory()
    undecided.begin("b/y:1", 5)
    token, why = undecided.begin("b/y:1", 0.01)
    assert token == 0 and why is not None  # still undecided: refused, sent again later


def test_a_notifier_that_never_answers_holds_up_only_its_own_plan_and_only_until_the_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A notifier whose host vanished without FIN or RST: the relay's connection stays open and no
    answer comes. Before, every relay of the member waited on it until TCP keepalive (2 h)."""
    monkeypatch.setattr(relays_module, "RELAY_WAIT_SECONDS", 1.0)
    stuck = threading.Event()

    def serve(connection: Connection) -> None:
        while True:
            message = connection.recv()
            assert isinstance(message, RelayedEvents)
            if message.plan == "vanished":
                stuck.wait(30)  # never answers while the test runs
                return
            connection.send(Ok())

    server = PeerServer("127.0.0.1", 0, "node-b", SECRET, serve)
    server.start()
    address = f"127.0.0.1:{server.port}"
    settings = ClusterSettings(
        "node-a", "127.0.0.1:1", "127.0.0.1", 0, (), ClusterKeys(SECRET), Timeouts(), Timing()
    )
    made = Relays(
        settings,
        leading=lambda plan: False,
        notifier_address=lambda plan: address,
        notifying=lambda plan: None,
    )
    outcome: list[str] = []

    def relay_vanished() -> None:
        try:
            made.relay_for("vanished")("In", [(1,)], [1])
            outcome.append("taken")
        except NotLeading:
            outcome.append("refused")

    try:
        waiting = threading.Thread(target=relay_vanished)
        waiting.start()
        time.sleep(0.2)  # its relay is sent and waits for an answer
        made.relay_for("answering")("In", [(2,)], [2])  # another plan's relay is not held up
        assert waiting.is_alive() and outcome == []
        waiting.join(10)
        assert not waiting.is_alive() and outcome == ["refused"]  # its client sends it again
    finally:
        stuck.set()
        made.close()
        server.stop()
