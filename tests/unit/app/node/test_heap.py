"""`heap.settle`: live objects frozen out of the collector's passes, cyclic garbage still freed."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from app.node import heap


class Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()  # the test process keeps its own collector policy


def test_settle_freezes_the_objects_alive() -> None:
    kept = Node()
    frozen = heap.settle()
    assert frozen > 0 and gc.get_freeze_count() > 0  # (the counts may differ by what was made since)
    assert not any(obj is kept for obj in gc.get_objects())  # no pass walks it any more


def test_settle_frees_cyclic_garbage_frozen_by_the_previous_call() -> None:
    retired = Node()
    ref = weakref.ref(retired)
    heap.settle()
    del retired
    gc.collect()
    assert ref() is not None  # frozen: a full pass does not see it
    heap.settle()
    assert ref() is None
