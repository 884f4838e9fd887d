"""A bundle a member relays again (its answer lost) gets the first attempt's answer."""

from __future__ import annotations

import threading
import time

from app.cluster.relays import RelayedBundles


def test_a_bundle_relayed_again_gets_the_first_answer_and_is_not_processed_twice() -> None:
    relayed = RelayedBundles(keep=2)
    first, answer = relayed.begin("b/x:1")
    assert first
    answers: list[str | None] = []
    again = threading.Thread(target=lambda: answers.append(relayed.begin("b/x:1")[1].wait(5)))
    again.start()  # the repeat arrives while the first attempt is still being processed: it waits
    time.sleep(0.05)
    assert answers == []
    relayed.taken(answer)
    again.join(5)
    assert answers == [None]  # taken: the repeat is answered ok, and not processed
    assert relayed.begin("b/x:1")[0] is False
    first, answer = relayed.begin("b/x:2")
    relayed.refused("b/x:2", answer, "not the notifier")
    assert relayed.begin("b/x:2")[0] is True  # a refused attempt is forgotten: the repeat is processed
    relayed.begin("b/x:3")
    assert relayed.begin("b/x:1")[0] is True  # past `keep`, the oldest ids are forgotten
    undecided = RelayedBundles()
    undecided.begin("b/y:1")
    assert undecided.begin("b/y:1")[1].wait(0.01) is not None  # still undecided: refused, sent again later
