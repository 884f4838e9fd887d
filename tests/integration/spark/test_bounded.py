"""`cepheus run --engine spark` on `local[2]` gives the local engine's output, stream by
stream in the same order: every conformance case, the seeds, each input format."""

from __future__ import annotations

import io
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner

from app.cli import main
from app.replay import ReplayError, first_timestamp, replay
from app.spark import runner
from app.spark.runner import input_files, run_on_spark
from tests.support.conformance import load_cases

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
SEEDS = ROOT / "samples"  # the seeds of the original WSO2 material
CASES = load_cases("dev.jsonl")


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def local_run(plan: str, path: Path) -> list[str]:
    out = io.StringIO()
    with open(path, encoding="utf-8") as f:
        replay(plan, enumerate(f, 1), out, first_time=lambda: first_timestamp(str(path)))
    return out.getvalue().splitlines()


def spark_run(spark: SparkSession, plan: str, path: Path | str, **kw: Any) -> list[str]:
    out = io.StringIO()
    run_on_spark(plan, str(path), out, spark=spark, parallelism=2, **kw)
    return out.getvalue().splitlines()


def per_stream(lines: list[str]) -> dict[str, list[str]]:
    got: dict[str, list[str]] = {}
    for line in lines:
        got.setdefault(json.loads(line)["stream"], []).append(line)
    return got


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_conformance_case_gives_the_local_output_on_spark(
    spark: SparkSession, case: dict[str, Any], tmp_path: Path
) -> None:
    events = _write_jsonl(tmp_path / "events.jsonl", case["events"])
    expected = local_run(case["plan"], events)
    assert per_stream(spark_run(spark, case["plan"], events)) == per_stream(expected)


def _temperatures(n: int, seed: int = 7) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    t = 1000
    out: list[dict[str, Any]] = []
    for _ in range(n):
        t += rnd.choice([0, 500, 1000, 3000])
        room = rnd.choice([100, 101, 105, 109, 110, 120])
        out.append(
            {
                "stream": "TempStream",
                "timestamp": t,
                "data": [rnd.randint(1, 5), room, round(rnd.uniform(20, 60), 1)],
            }
        )
    out.append({"time": t + 700_000})
    return out


@pytest.fixture(params=["local", "spark"])
def run_plan(request: pytest.FixtureRequest) -> Callable[[str, Path | str], list[str]]:
    """The local and the Spark runner behind one call: `run_plan(plan, input) -> lines`.
    The local engine reads one file: a directory or glob is its files in name order."""
    if request.param == "local":

        def local(plan: str, path: Path | str) -> list[str]:
            out = io.StringIO()
            lines = (line for f in input_files(str(path)) for line in Path(f).read_text().splitlines())
            replay(plan, enumerate(lines, 1), out, start_time=1000)
            return out.getvalue().splitlines()

        return local
    session = request.getfixturevalue("spark")
    return lambda plan, path: spark_run(session, plan, path)


def test_temperature_seed_gives_the_local_results(
    run_plan: Callable[[str, Path | str], list[str]], tmp_path: Path
) -> None:
    plan = (SEEDS / "temperature" / "plan.siddhi").read_text(encoding="utf-8")
    events = _write_jsonl(tmp_path / "temp.jsonl", _temperatures(600))
    expected = per_stream(local_run(plan, events))
    assert set(expected) == {"AvgTempStream", "AlertStream", "HighTempStream"}
    assert per_stream(run_plan(plan, events)) == expected


def test_temperature_seed_runs_group2_in_two_tasks(spark: SparkSession, tmp_path: Path) -> None:
    plan = (SEEDS / "temperature" / "plan.siddhi").read_text(encoding="utf-8")
    events = _write_jsonl(tmp_path / "temp.jsonl", _temperatures(200))
    report = run_on_spark(plan, str(events), io.StringIO(), spark=spark)
    assert ("query4", 2) in report.groups and ("main", 1) in report.groups


def test_rising_temperature_over_several_input_partitions_finds_every_local_alert(
    run_plan: Callable[[str, Path | str], list[str]], tmp_path: Path
) -> None:
    plan = (SEEDS / "rising-temperature" / "plan.siddhi").read_text(encoding="utf-8")
    rnd = random.Random(3)
    events = [
        {"stream": "TempStream", "timestamp": 1000 + i * 10, "data": [round(rnd.uniform(10, 30), 1)]}
        for i in range(900)
    ]
    whole = _write_jsonl(tmp_path / "all.jsonl", events)
    parts = tmp_path / "parts"
    parts.mkdir()
    for n in range(6):  # six files: six input partitions at least
        _write_jsonl(parts / f"part-{n:02d}.jsonl", events[n * 150 : (n + 1) * 150])
    expected = local_run(plan, whole)
    assert len(expected) > 100
    assert run_plan(plan, parts) == expected
    assert run_plan(plan, str(parts / "part-*.jsonl")) == expected


def test_csv_and_parquet_inputs_give_the_jsonl_output(spark: SparkSession, tmp_path: Path) -> None:
    plan = (SEEDS / "temperature" / "plan.siddhi").read_text(encoding="utf-8")
    events = [e for e in _temperatures(300, seed=11) if "stream" in e]
    jsonl = _write_jsonl(tmp_path / "t.jsonl", events)
    rows = [
        {
            "stream": e["stream"],
            "timestamp": e["timestamp"],
            "deviceID": e["data"][0],
            "roomNo": e["data"][1],
            "temp": e["data"][2],
        }
        for e in events
    ]
    csv = tmp_path / "t.csv"
    csv.write_text(
        "stream,timestamp,deviceID,roomNo,temp\n"
        + "".join(f"{r['stream']},{r['timestamp']},{r['deviceID']},{r['roomNo']},{r['temp']}\n" for r in rows)
    )
    parquet = tmp_path / "t.parquet"
    spark.createDataFrame(rows).select("stream", "timestamp", "deviceID", "roomNo", "temp").coalesce(
        1
    ).write.parquet(str(parquet))
    expected = per_stream(spark_run(spark, plan, jsonl))
    assert expected == per_stream(local_run(plan, jsonl))
    assert per_stream(spark_run(spark, plan, csv)) == expected
    assert per_stream(spark_run(spark, plan, parquet)) == expected


def test_a_bad_line_is_reported_with_its_file_and_line(spark: SparkSession, tmp_path: Path) -> None:
    plan = "define stream S (v int); from S select v insert into O;"
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"stream": "S", "timestamp": 1000, "data": [1]}\n\n{"stream": "S", "timestamp": 1001, "data": ["x"]}\n'
    )
    with pytest.raises(ReplayError, match=r"bad.jsonl:3: .*attribute 'v'"):
        spark_run(spark, plan, path)


def test_cli_runs_the_plan_with_engine_spark(spark: SparkSession, tmp_path: Path) -> None:
    plan = tmp_path / "plan.siddhi"
    plan.write_text(
        "define stream S (k string, v int); partition with (k of S) begin from S#window.length(2) select k, sum(v) as total insert into O; end;"
    )
    events = _write_jsonl(
        tmp_path / "e.jsonl",
        [{"stream": "S", "timestamp": 1000 + i, "data": ["ab"[i % 2], i]} for i in range(20)],
    )
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(
        main, ["run", str(plan), "--input", str(events), "--output", str(out), "--engine", "spark"]
    )
    assert result.exit_code == 0, result.output
    assert out.read_text().splitlines() == local_run(plan.read_text(), events)


WINDOWED = """
define stream Temp (room string, temp double);
partition with (room of Temp)
begin
    from Temp#window.time(2 sec) select room, max(temp) as top insert all events into Top;
    from every e1=Temp -> e2=Temp[e1.temp + 3 <= temp] within 3 sec
    select e1.room, e1.temp as initial, e2.temp as final insert into Rise;
end;
"""


def _windowed_events(n: int, seed: int) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    out: list[dict[str, Any]] = []
    t = 1000
    for i in range(n):
        t += rnd.choice([0, 0, 200, 700, 1500])
        event: dict[str, Any] = {
            "stream": "Temp",
            "data": [rnd.choice("abcdefg"), round(rnd.uniform(10, 30), 1)],
        }
        if i == 0 or rnd.random() > 0.2:  # some events take the last timestamp, as locally
            event["timestamp"] = t
        out.append(event)
        if i % 50 == 49:
            out.append({"time": t + 2500})  # a clock marker: every task's timers fire
            t += 2500
    return out


def test_markers_and_missing_timestamps_across_files_give_the_local_output(
    spark: SparkSession, tmp_path: Path
) -> None:
    events = _windowed_events(400, seed=21)
    whole = _write_jsonl(tmp_path / "all.jsonl", events)
    parts = tmp_path / "parts"
    parts.mkdir()
    for n in range(4):
        _write_jsonl(parts / f"p{n}.jsonl", events[n * 105 : (n + 1) * 105])
    expected = per_stream(local_run(WINDOWED, whole))
    assert {"Top", "Rise"} <= set(expected)
    out = io.StringIO()
    report = run_on_spark(WINDOWED, str(parts), out, spark=spark, parallelism=2)
    assert ("partition1", 2) in report.groups  # spread by key, not the one-group fallback
    assert per_stream(out.getvalue().splitlines()) == expected


def test_timestamps_going_back_run_as_one_group_with_the_local_output(
    spark: SparkSession, tmp_path: Path
) -> None:
    events = [e for e in _windowed_events(300, seed=5) if "stream" in e]
    for k, e in enumerate(events):
        e["timestamp"] = 1000 + (k * 7919) % 20000  # out of order
    path = _write_jsonl(tmp_path / "shuffled.jsonl", events)
    out = io.StringIO()
    report = run_on_spark(WINDOWED, str(path), out, spark=spark, parallelism=2)
    assert report.groups == [("main", 1)]
    assert per_stream(out.getvalue().splitlines()) == per_stream(local_run(WINDOWED, path))


def test_a_clean_input_runs_in_one_job_and_any_other_takes_the_general_path(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    general: list[str] = []
    real = runner._general

    def spy(*args: Any, **kw: Any) -> Any:
        general.append(args[2][0])
        return real(*args, **kw)

    monkeypatch.setattr(runner, "_general", spy)
    events = _windowed_events(300, seed=9)  # clock markers too, and some events unstamped
    last = 0
    stamped = []
    for e in events:
        last = max(last, e.get("timestamp", e.get("time", last)))
        stamped.append(e if "time" in e else {**e, "timestamp": e.get("timestamp", last)})
    clean = _write_jsonl(tmp_path / "clean.jsonl", stamped)
    assert per_stream(spark_run(spark, WINDOWED, clean)) == per_stream(local_run(WINDOWED, clean))
    assert general == []
    path = _write_jsonl(tmp_path / "unstamped.jsonl", events)
    assert per_stream(spark_run(spark, WINDOWED, path)) == per_stream(local_run(WINDOWED, path))
    assert general == [str(path)]
