"""Run the Siddhi conformance cases (`tests/conformance/*.jsonl`) through `cepheus
run` / `cepheus validate` and compare with what each Siddhi test asserts."""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from app.cli import main

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = Path(os.environ.get("CEPHEUS_CONFORMANCE", ROOT / "tests" / "conformance"))
CORE_FEATURES = {"filter", "window", "aggregate", "function", "other"}


def load_cases(name: str = "dev.jsonl") -> list[dict[str, Any]]:
    path = CONFORMANCE / name
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, float) and math.isnan(a):
            return isinstance(b, float) and math.isnan(b)
        return math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-9)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _multiset_equal(got: list[list[Any]], want: list[list[Any]]) -> bool:
    if len(got) != len(want):
        return False
    remaining = list(got)
    for w in want:
        for i, g in enumerate(remaining):
            if _close(g, w):
                del remaining[i]
                break
        else:
            return False
    return True


def run_case(case: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """Replay the case through `cepheus run`; returns the output records and stderr."""
    with tempfile.TemporaryDirectory() as tmp:
        plan = Path(tmp, "plan.siddhi")
        plan.write_text(case["plan"], encoding="utf-8")
        events = Path(tmp, "events.jsonl")
        events.write_text("".join(json.dumps(e) + "\n" for e in case["events"]), encoding="utf-8")
        out = Path(tmp, "out.jsonl")
        result = CliRunner().invoke(main, ["run", str(plan), "--input", str(events), "--output", str(out)])
        if result.exit_code != 0:
            return [], (result.output or "") + (str(result.exception) if result.exception else "")
        records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line]
        return records, ""


def check_case(case: dict[str, Any]) -> str | None:
    """None when the case passes, else what differs."""
    records, error = run_case(case)
    if error:
        return f"cepheus run failed: {error.strip()}"
    problems = []
    for stream, expect in case["expect"].items():
        got = {"current": [], "expired": []}
        for r in records:
            if r["stream"] == stream:
                got[r["type"]].append(r["data"])
        ordered = expect.get("ordered", True)
        for kind in ("current", "expired"):
            if f"{kind}_count" in expect and len(got[kind]) != expect[f"{kind}_count"]:
                problems.append(
                    f"{stream} {kind}: {len(got[kind])} events, expected {expect[f'{kind}_count']}"
                )
            if kind in expect:
                want = expect[kind]
                ok = _close(got[kind], want) if ordered else _multiset_equal(got[kind], want)
                if not ok:
                    problems.append(f"{stream} {kind}: got {got[kind]}, expected {want}")
    return "; ".join(problems) or None


def check_invalid(case: dict[str, Any]) -> str | None:
    """None when `cepheus validate` rejects the plan with `file:line:col: message` at the case's
    `at` ("line:col"), else why not. A case without `at` (the format allows it) must still
    point inside the plan: at an existing line, and a column within it or just past its end."""
    with tempfile.TemporaryDirectory() as tmp:
        plan = Path(tmp, "plan.siddhi")
        plan.write_text(case["plan"], encoding="utf-8")
        result = CliRunner().invoke(main, ["validate", str(plan)])
        if result.exit_code != 1:
            return f"exit code {result.exit_code}, output: {result.output.strip()[:300]}"
        first = result.output.splitlines()[0] if result.output else ""
        prefix = f"{plan}:"
        if not first.startswith(prefix):
            return f"no file:line:col in {first!r}"
        line, col, *message = first[len(prefix) :].split(":", 2)
        if not (line.isdigit() and col.isdigit() and message and message[0].startswith(" ")):
            return f"no line:col: message in {first!r}"
        at = f"{line}:{col}"
        if "at" in case:
            return None if at == case["at"] else f"rejected at {at}, expected at {case['at']}: {first!r}"
        lines = case["plan"].split("\n")
        if not (1 <= int(line) <= len(lines) and 1 <= int(col) <= len(lines[int(line) - 1]) + 1):
            return f"{at} is outside the plan: {first!r}"
        return None


def summary(cases: list[dict[str, Any]], invalid: bool = False) -> Counter[str]:
    counts: Counter[str] = Counter()
    for case in cases:
        problem = check_invalid(case) if invalid else check_case(case)
        counts["fail" if problem else "pass"] += 1
    return counts
