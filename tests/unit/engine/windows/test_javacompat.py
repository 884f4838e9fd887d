"""Java strings, hash codes, hash map order and ComplexEventChunk quirks the windows rely on."""

from __future__ import annotations

import pytest

from engine.runtime.windows.eventchunk import JChunk, Node, restore_chunks, snapshot_chunks
from engine.runtime.windows.javacompat import JavaMap, java_hash, java_rem, java_str, string_hash
from engine.types import AttrType, f32


@pytest.mark.parametrize(
    ("value", "kind", "text"),
    [
        (None, None, "null"),
        (True, AttrType.BOOL, "true"),
        (42, AttrType.INT, "42"),
        (55.6, AttrType.DOUBLE, "55.6"),
        (f32(55.6), AttrType.FLOAT, "55.6"),
        (100.0, AttrType.DOUBLE, "100.0"),
        (0.001, AttrType.DOUBLE, "0.001"),
        (1e-4, AttrType.DOUBLE, "1.0E-4"),
        (1e7, AttrType.DOUBLE, "1.0E7"),
        (123456789.0, AttrType.DOUBLE, "1.23456789E8"),
        (-0.0, AttrType.DOUBLE, "-0.0"),
        (float("nan"), AttrType.DOUBLE, "NaN"),
    ],
)
def test_java_str_prints_values_as_string_value_of(value: object, kind: AttrType | None, text: str) -> None:
    assert java_str(value, kind) == text


def test_java_hash_matches_java_hash_codes() -> None:
    assert string_hash("hello") == 99162322
    assert java_hash(-1, AttrType.INT) == 0xFFFFFFFF
    assert java_hash(-1, AttrType.LONG) == 0
    assert java_hash(1.0, AttrType.DOUBLE) == 1072693248
    assert java_hash(True) == 1231


def test_java_rem_keeps_the_sign_of_the_dividend() -> None:
    assert java_rem(-7, 3) == -1
    assert java_rem(7, -3) == 1


def test_hash_map_iterates_by_bucket_then_insertion() -> None:
    m: JavaMap[str, int] = JavaMap(string_hash, concurrent=False)
    for k in ("apple", "banana", "cherry"):
        m.put(k, 1)
    assert m.keys() == ["banana", "apple", "cherry"]


def test_concurrent_hash_map_resize_reverses_nodes_before_the_last_run() -> None:
    keys = [1, 17, 33, 49, 2, 3, 4, 5, 6, 7, 8, 9]  # 1, 17, 33, 49 share bucket 1 of 16
    plain: JavaMap[int, int] = JavaMap(lambda k: k, concurrent=False)
    concurrent: JavaMap[int, int] = JavaMap(lambda k: k, concurrent=True)
    for k in keys:
        plain.put(k, k)
        concurrent.put(k, k)
    assert (plain.cap, concurrent.cap) == (16, 32)  # the concurrent map resizes at 12 keys, HashMap above 12
    assert concurrent.keys()[:2] == [33, 1]
    assert concurrent.keys()[-2:] == [17, 49]
    plain.put(10, 10)
    assert plain.keys()[:2] == [1, 33]


def test_removing_the_last_event_leaves_the_chunk_a_stale_tail() -> None:
    chunk = JChunk()
    for i in range(2):
        chunk.add(Node(i, (i,)))
    while chunk.has_next():
        if chunk.next().ts == 1:
            chunk.remove()
    chunk.add(Node(2, (2,)))  # appended to the removed node, as Siddhi does
    assert [n.ts for n in chunk] == [0]


def test_chunk_snapshots_keep_pointers_and_detached_nodes() -> None:
    chunk = JChunk()
    for i in range(3):
        chunk.add(Node(i, (i,)))
    chunk.next()
    chunk.next()
    (copy,) = restore_chunks(snapshot_chunks([chunk]))
    assert [n.ts for n in copy] == [0, 1, 2]
    assert copy.ret is not None and copy.ret.ts == 1
    assert copy.prev is not None and copy.prev.ts == 0
    assert copy.last is not None and copy.last.ts == 2
