"""Siddhi's `ComplexEventChunk`: a linked list of events with an iterator built in.

Some windows (unique:length, unique:time, session) keep their events in such chunks and
never reset the iterator between events, or remove the last event without fixing the
chunk's tail; what they emit depends on it, so `JChunk` reproduces the pointer updates
exactly. `snapshot_chunks` saves chunks with every node their pointers reach, detached
ones included, so a restore changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

Row = tuple[Any, ...]


class Node:
    __slots__ = ("ts", "row", "next")

    def __init__(self, ts: int, row: Row) -> None:
        self.ts = ts
        self.row = row
        self.next: Node | None = None


class JChunk:
    """A `ComplexEventChunk`: `first`/`last` plus the iterator's `prev` (previousToLastReturned)
    and `ret` (lastReturned), with Java's exact pointer updates, stale `last` included."""

    __slots__ = ("first", "prev", "ret", "last")

    def __init__(self) -> None:
        self.first: Node | None = None
        self.prev: Node | None = None
        self.ret: Node | None = None
        self.last: Node | None = None

    @staticmethod
    def tail(chain: Node) -> Node:
        node = chain
        while node.next is not None and node.next is not chain:
            node = node.next
        if node.next is chain:
            node.next = None
        return node

    def add(self, chain: Node | None) -> None:
        if self.first is None:
            self.first = chain
        else:
            assert self.last is not None
            self.last.next = chain
        self.last = None if chain is None else self.tail(chain)

    def poll(self) -> Node | None:
        node = self.first
        if node is not None:
            self.first = node.next
            node.next = None
        return node

    def has_next(self) -> bool:
        if self.ret is not None:
            return self.ret.next is not None
        if self.prev is not None:
            return self.prev.next is not None
        return self.first is not None

    def next(self) -> Node:
        if self.ret is not None:
            node = self.ret.next
            self.prev = self.ret
        elif self.prev is not None:
            node = self.prev.next
        else:
            node = self.first
        assert node is not None
        self.ret = node
        return node

    def remove(self) -> None:
        ret = self.ret
        assert ret is not None
        if self.prev is not None:
            self.prev.next = ret.next
        else:
            self.first = ret.next
            if self.first is None:
                self.last = None
        ret.next = None
        self.ret = None

    def insert_before_current(self, chain: Node) -> None:
        assert self.ret is not None
        end = self.tail(chain)
        if self.prev is not None:
            self.prev.next = chain
        else:
            self.first = chain
        self.prev = end
        end.next = self.ret

    def clear(self) -> None:
        self.first = self.prev = self.ret = self.last = None

    def reset(self) -> None:
        self.prev = self.ret = None

    def __iter__(self) -> Iterator[Node]:
        node = self.first
        while node is not None:
            yield node
            node = node.next

    def events(self) -> list[tuple[int, Row]]:
        return [(n.ts, n.row) for n in self]


def snapshot_chunks(chunks: list[JChunk]) -> Any:
    """Every node reachable from any pointer of `chunks`, with the pointers as indices."""
    ids: dict[int, int] = {}
    nodes: list[Node] = []

    def visit(node: Node | None) -> int:
        start = node
        while node is not None and id(node) not in ids:
            ids[id(node)] = len(nodes)
            nodes.append(node)
            node = node.next
        return -1 if start is None else ids[id(start)]

    pointers = [[visit(c.first), visit(c.prev), visit(c.ret), visit(c.last)] for c in chunks]
    table = [[n.ts, list(n.row), -1 if n.next is None else ids[id(n.next)]] for n in nodes]
    return {"nodes": table, "chunks": pointers}


def restore_chunks(state: Any) -> list[JChunk]:
    nodes = [Node(ts, tuple(row)) for ts, row, _ in state["nodes"]]
    for node, (_, _, nxt) in zip(nodes, state["nodes"], strict=True):
        node.next = None if nxt < 0 else nodes[nxt]
    out = []
    for first, prev, ret, last in state["chunks"]:
        c = JChunk()
        c.first, c.prev, c.ret, c.last = (None if i < 0 else nodes[i] for i in (first, prev, ret, last))
        out.append(c)
    return out
