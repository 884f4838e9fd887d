"""`settle`: the node's long-lived objects moved out of the cyclic garbage collector's way.

A node imports SQLAlchemy, Flask, the Thrift code and its plans once, and then allocates
rows, events and records by the million. CPython's full collections walk every tracked
object each time (hundreds of thousands of them here, 50 ms a pass), and the records an
output adapter holds while it catches up survive into the oldest generation and trigger
those passes several times a second. `gc.freeze` puts everything alive at that moment into a
permanent generation no pass walks. The server does that once it has started and again after
each change of the registry (new plans and adapters are long-lived too), first unfreezing and
collecting everything, so cyclic garbage frozen by the previous call (a retired adapter's) is
still freed. Only the server process calls this: an embedding program (the tests) keeps its
own collector policy. Imports nothing of ours.
"""

from __future__ import annotations

import gc
import logging

log = logging.getLogger(__name__)


def settle() -> int:
    """Collect everything (frozen before or not), then freeze what is left; how many objects that is."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    log.debug("heap: %d objects frozen out of the garbage collector's passes", frozen)
    return frozen
