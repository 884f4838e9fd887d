"""The bounded runner's input: which files, in which format, read as Spark partitions in
input order, and parsed and checked in the tasks as `cepheus run` checks them.

A parsed row is `("ok", index, stream, timestamp or None, row)` (`stream` None: a clock
marker; `row` as `check_row` returns it, so a task does not check it again) or
`("error", index, file number, message, text)`.
"""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import engine
from app.spark.errors import SparkRunError
from engine.types import INT_MAX, INT_MIN, LONG_MAX, LONG_MIN, AttrType

if TYPE_CHECKING:
    from pyspark import RDD
    from pyspark.sql import SparkSession

Numbered = tuple[tuple[int, Any], int]  # ((file number, line or table row), index)


def input_files(path: str) -> list[str]:
    """A file, every visible file of a directory (Spark's `_SUCCESS` and the like left
    out), or a glob's matches; in name order, which is the input's order."""
    if os.path.isdir(path):
        found = [
            os.path.join(root, f)
            for root, _, files in os.walk(path)
            for f in files
            if not f.startswith((".", "_"))
        ]
    elif any(c in path for c in "*?["):
        found = [f for f in glob.glob(path) if os.path.isfile(f)]
    else:
        found = [path] if os.path.isfile(path) else []
    if not found:
        msg = f"{path}: no input file there (give a file, a directory or a glob)"
        raise SparkRunError(msg)
    return sorted(found)


def input_format(files: list[str]) -> str:
    kinds = set()
    for f in files:
        low = f.lower()
        kinds.add("csv" if low.endswith(".csv") else "parquet" if low.endswith(".parquet") else "jsonl")
    if len(kinds) > 1:
        msg = f"input mixes formats ({', '.join(sorted(kinds))}); give files of one format"
        raise SparkRunError(msg)
    return kinds.pop()


# ---- parsing (runs in the tasks) ------------------------------------------------------------


_EXACT = {AttrType.STRING: "str", AttrType.DOUBLE: "float", AttrType.BOOL: "bool"}
_RANGE = {AttrType.INT: (INT_MIN, INT_MAX), AttrType.LONG: (LONG_MIN, LONG_MAX)}


def row_checker(rt: engine.Runtime, stream: str) -> Callable[[Any], tuple[Any, ...]]:
    """`rt.check_row` for one stream, with a fast path for rows whose values already have
    their attribute's type (or are null): most JSON rows, which the check leaves as they are."""
    tests = []
    for n, (_, kind) in enumerate(rt.attributes(stream)):
        v = f"data[{n}]"
        if kind in _EXACT:
            tests.append(f"(type({v}) is {_EXACT[kind]} or {v} is None)")
        elif kind in _RANGE:
            lo, hi = _RANGE[kind]
            tests.append(f"((type({v}) is int and {lo} <= {v} <= {hi}) or {v} is None)")
        elif kind is not AttrType.OBJECT:  # a float is rounded to 32 bits: the check does it
            tests.append("False")
    src = (
        "def check(data):\n"
        f"    if type(data) is list and len(data) == {len(rt.attributes(stream))} and {' and '.join(tests) or 'True'}:\n"
        "        return tuple(data)\n"
        "    return slow(stream, data)\n"
    )
    ns: dict[str, Any] = {"slow": rt.check_row, "stream": stream}
    exec(compile(src, f"<row check {stream}>", "exec"), ns)  # noqa: S102 - generated from the plan's types
    check: Callable[[Any], tuple[Any, ...]] = ns["check"]
    return check


def parse_lines(plan: str, rows: Iterable[Numbered]) -> Iterator[tuple[Any, ...]]:
    """JSON Lines: events `{"stream", "timestamp"?, "data"}` and markers `{"time"}`."""
    rt = engine.compile(plan, fuse_partitions=False)
    names = set(rt.stream_names())
    loads, scan = json.loads, json.JSONDecoder().scan_once  # type: ignore[attr-defined]
    checkers = {s: row_checker(rt, s) for s in names}
    for (fileno, text), idx in rows:
        try:
            try:  # the decoder's own scanner, without the checks around it; any doubt: json.loads
                obj, end = scan(text, 0)
                if end != len(text):
                    obj = loads(text)
            except StopIteration:
                obj = loads(text)
        except json.JSONDecodeError as exc:
            yield ("error", idx, fileno, f"not valid JSON ({exc.msg} at column {exc.colno})", text)
            continue
        if not isinstance(obj, dict):
            yield ("error", idx, fileno, "expected a JSON object with 'stream' and 'data', or 'time'", text)
            continue
        if "stream" not in obj:
            t = obj.get("time")
            if not isinstance(t, int) or isinstance(t, bool):
                why = "a line needs 'stream' and 'data' (an event) or an integer 'time' (a clock marker)"
                yield ("error", idx, fileno, why, text)
                continue
            yield ("ok", idx, None, t, None)
            continue
        stream, data, ts = obj["stream"], obj.get("data"), obj.get("timestamp")
        if not isinstance(stream, str) or stream not in names:
            known = ", ".join(rt.stream_names()) or "none"
            yield ("error", idx, fileno, f"unknown stream {stream!r} (the plan's streams: {known})", text)
            continue
        if not isinstance(data, list):
            yield ("error", idx, fileno, "'data' must be a list of attribute values", text)
            continue
        if ts is not None and (not isinstance(ts, int) or isinstance(ts, bool)):
            yield ("error", idx, fileno, "'timestamp' must be an integer number of ms", text)
            continue
        try:
            row = checkers[stream](data)
        except (TypeError, ValueError) as exc:
            yield ("error", idx, fileno, str(exc), text)
            continue
        yield ("ok", idx, stream, ts, row)


_CONVERT: dict[AttrType, Callable[[Any], Any]] = {
    AttrType.INT: int,
    AttrType.LONG: int,
    AttrType.FLOAT: float,
    AttrType.DOUBLE: float,
    AttrType.BOOL: lambda v: str(v).lower() == "true",
}


def parse_table_rows(plan: str, rows: Iterable[Numbered]) -> Iterator[tuple[Any, ...]]:
    """CSV/Parquet rows (`stream`, `timestamp` and the stream's attributes by name)."""
    rt = engine.compile(plan, fuse_partitions=False)
    names = set(rt.stream_names())
    for (fileno, row), idx in rows:
        stream, ts = row.get("stream"), row.get("timestamp")
        text = json.dumps(row, default=str)
        if stream not in names:
            known = ", ".join(rt.stream_names()) or "none"
            yield ("error", idx, fileno, f"unknown stream {stream!r} (the plan's streams: {known})", text)
            continue
        data = []
        try:
            for name, kind in rt.attributes(stream):
                value = row.get(name)
                if isinstance(value, str) and kind in _CONVERT:
                    value = _CONVERT[kind](value)
                data.append(value)
            checked = rt.check_row(stream, data)
            ts = None if ts is None else int(ts)
        except (TypeError, ValueError) as exc:
            yield ("error", idx, fileno, str(exc), text)
            continue
        yield ("ok", idx, stream, ts, checked)


def parse(plan: str, fmt: str, rows: Iterable[Numbered]) -> Iterator[tuple[Any, ...]]:
    return parse_lines(plan, rows) if fmt == "jsonl" else parse_table_rows(plan, rows)


# ---- reading ------------------------------------------------------------------------------


def with_files(file_of: list[int], part: int, raw: Iterable[Any]) -> Iterator[tuple[int, Any]]:
    """A partition's lines (blank ones left out) or table rows, each with its file number."""
    fileno = file_of[part]
    for r in raw:
        if isinstance(r, str):
            if r.strip():
                yield fileno, r
        else:
            yield fileno, r.asDict()


def raw_input(spark: SparkSession, files: list[str], fmt: str) -> tuple[RDD[Any], list[int]]:
    """The files' lines or table rows, read by the JVM, partitions in input order; and the
    file number of each partition (`with_files` pairs them up in the one Python stage)."""
    sc = spark.sparkContext
    if fmt == "jsonl":
        # a file is read in up to `defaultParallelism` splits: parsing runs on every core
        splits = max(1, sc.defaultParallelism // len(files))
        parts: list[RDD[Any]] = [sc.textFile(f, minPartitions=splits) for f in files]
    else:
        reader = spark.read.option("header", "true") if fmt == "csv" else spark.read
        load = reader.csv if fmt == "csv" else reader.parquet
        parts = [load(f).rdd for f in files]
    file_of = [n for n, rdd in enumerate(parts) for _ in range(rdd.getNumPartitions())]
    return sc.union(parts), file_of
