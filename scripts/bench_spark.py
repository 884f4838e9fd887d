"""The Spark runner's throughput against the local engine and Spark's own DataFrame
equivalent, and streaming micro-batch latency.

    python scripts/bench_spark.py [--events N] [--masters local[1],local[2]] [--batches N]

For each workload (partitioned pattern, partitioned sliding average, filter) and each
master: events/s of `cepheus run --engine spark` (app/spark/runner.py, reading the JSONL
file and writing every output), of the local engine (`cepheus run`, one process), and of
Spark's DataFrame equivalent where one exists. The equivalent does the runner's work: it
reads the same file, computes the same rows and brings them to the driver as JSON lines in
input order; `DF no output` computes the same rows and drops them (the `noop` sink: no
order, no JSON, no driver), which is less work than the runner does. Spark SQL has no
pattern operator, so the pattern workload has no equivalent. Each master runs in a process of its own (one Spark
context per process); a first run warms the Python workers and is not timed.
Then a streaming deployment (app/spark/streaming.py) of the partitioned pattern takes a
file of events every 0.2 s: micro-batch duration (trigger execution) p50 and p99.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REPEAT = 3

WORKLOADS: dict[str, str] = {
    "partitioned pattern": """
define stream Temp (room string, temp double);
partition with (room of Temp)
begin
    from every e1=Temp -> e2=Temp[e1.temp + 5 <= temp] within 10 sec
    select e1.room as room, e1.temp as initial, e2.temp as final insert into Rise;
end;
""",
    "partitioned sliding avg": """
define stream Temp (room string, temp double);
partition with (room of Temp)
begin
    from Temp#window.length(10) select room, avg(temp) as avgTemp insert into Avg;
end;
""",
    "filter": """
define stream Temp (room string, temp double);
from Temp[temp > 45] select room, temp insert into Hot;
""",
}


def write_events(path: str, n: int) -> None:
    rnd = random.Random(1)
    rooms = [f"r{k}" for k in range(64)]
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(
                json.dumps(
                    {
                        "stream": "Temp",
                        "timestamp": 1000 + i,
                        "data": [rnd.choice(rooms), round(rnd.uniform(20, 50), 1)],
                    }
                )
                + "\n"
            )


SCHEMA = "stream string, timestamp long, data array<string>"


def dataframe_equivalent(spark: Any, name: str, path: str, *, noop: bool = False) -> tuple[float, int] | None:
    """Spark's own equivalent of a workload: (seconds, output rows). It does the runner's
    work: it reads the same file, parses it in the JVM, computes the same rows, and brings
    them to the driver as JSON lines in input order (sorted, then collected through Arrow),
    written to a buffer as the runner writes its output. `noop`: the same rows computed
    and dropped (Spark's `noop` sink): no order, no JSON, nothing on the driver."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if name == "partitioned pattern":
        return None
    t = time.perf_counter()
    raw = spark.read.text(path)
    j = F.from_json("value", SCHEMA)
    df = raw.select(F.monotonically_increasing_id().alias("i"), j.alias("j")).select(
        "i",
        F.col("j.timestamp").alias("timestamp"),
        F.col("j.data")[0].alias("room"),
        F.col("j.data")[1].cast("double").alias("temp"),
    )
    if name == "filter":
        stream, out = "Hot", df.where(F.col("temp") > 45).select("i", "timestamp", "room", "temp")
    else:
        w = Window.partitionBy("room").orderBy("i").rowsBetween(-9, 0)
        stream, out = "Avg", df.select("i", "timestamp", "room", F.avg("temp").over(w).alias("temp"))
    if noop:
        out.write.format("noop").mode("overwrite").save()
        return time.perf_counter() - t, 0
    record = F.struct(
        F.lit(stream).alias("stream"),
        "timestamp",
        F.lit("current").alias("type"),
        F.array("room", F.col("temp").cast("string")).alias("data"),
    )
    table = out.orderBy("i").select(F.to_json(record).alias("line")).toArrow()
    lines = table.column("line").to_pylist()
    buf = io.StringIO()
    buf.write("\n".join(lines) + "\n")
    return time.perf_counter() - t, len(lines)


def one_master(master: str, path: str, n: int) -> dict[str, Any]:
    from app.replay import replay
    from app.spark.runner import run_on_spark
    from app.spark.session import spark_session

    spark = spark_session(master, "cepheus bench")
    cores = spark.sparkContext.defaultParallelism
    results: dict[str, Any] = {}
    for name, plan in WORKLOADS.items():
        run_on_spark(plan, path, io.StringIO(), spark=spark)  # warm-up: Python workers
        dataframe_equivalent(spark, name, path)  # warm-up
        spark_s = local_s = df_s = noop_s = float("inf")
        df_rows = None
        for _ in range(REPEAT):  # best of REPEAT, interleaved: the machine is shared, timings vary
            t = time.perf_counter()
            report = run_on_spark(plan, path, io.StringIO(), spark=spark, parallelism=cores)
            spark_s = min(spark_s, time.perf_counter() - t)
            t = time.perf_counter()
            with open(path, encoding="utf-8") as f:
                local_out = replay(plan, enumerate(f, 1), io.StringIO(), start_time=1000)
            local_s = min(local_s, time.perf_counter() - t)
            d = dataframe_equivalent(spark, name, path)
            if d is not None:
                df_s, df_rows = min(df_s, d[0]), d[1]
                noop_s = min(noop_s, dataframe_equivalent(spark, name, path, noop=True)[0])  # type: ignore[index]
        results[name] = {
            "spark_runner": n / spark_s,
            "local": n / local_s,
            "dataframe": None if df_rows is None else n / df_s,
            "dataframe_noop": None if df_rows is None else n / noop_s,
            "outputs": report.written,
            "local_outputs": local_out,
            "dataframe_outputs": df_rows,
        }
    spark.stop()
    return results


def streaming_latency(batches: int) -> tuple[float, float, int]:
    from adapters.output.memory import MemoryAdapter
    from app.spark.handoff import HandOff
    from app.spark.session import spark_session
    from app.spark.streaming import SparkDeployment

    spark = spark_session("local[2]", "cepheus bench streaming")
    rnd = random.Random(2)
    with tempfile.TemporaryDirectory() as tmp:
        handoff = HandOff(os.path.join(tmp, "handoff"))
        sink = MemoryAdapter("rise")
        sink.start()
        deployment = SparkDeployment(
            spark,
            WORKLOADS["partitioned pattern"],
            handoff.directory,
            os.path.join(tmp, "checkpoints"),
            {"Rise": sink},
            start_time=1000,
            trigger_seconds=0.1,
        )
        deployment.start()
        seen: dict[tuple[str, int], int] = {}  # (query, batch) -> trigger execution ms

        def poll() -> None:
            for name, q in deployment.queries.items():
                p = q.lastProgress
                if p and p.get("numInputRows"):
                    seen[(name, p["batchId"])] = p["durationMs"]["triggerExecution"]
                    if os.environ.get("BENCH_DEBUG"):
                        print(name, p["batchId"], p["numInputRows"], p["durationMs"], file=sys.stderr)

        # warm-up: the first micro-batches start the Python workers
        for b in range(3):
            handoff.append([("Temp", 1000 + b, [f"r{rnd.randrange(16)}", 30.0])])
            deployment.process_available()
        poll()
        warm = set(seen)
        for b in range(batches):
            handoff.append(
                [
                    ("Temp", 1000 + b * 1000 + k, [f"r{rnd.randrange(16)}", round(rnd.uniform(20, 50), 1)])
                    for k in range(200)
                ]
            )
            for _ in range(4):
                time.sleep(0.05)
                poll()
        deployment.process_available()
        poll()
        durations = [ms for key, ms in seen.items() if key not in warm]
        deployment.stop()
        sink.stop()
    spark.stop()
    durations.sort()
    p50 = statistics.median(durations)
    p99 = durations[min(len(durations) - 1, int(len(durations) * 0.99))]
    return p50, p99, len(durations)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--masters", default="local[1],local[2]")
    ap.add_argument("--batches", type=int, default=20, help="streaming micro-batches to time")
    ap.add_argument("--streaming-only", action="store_true", help="only the streaming latency")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # run one master in this process, print JSON
    ap.add_argument("--input", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one_master(args.one, args.input, args.events)))
        return
    if args.streaming_only:
        p50, p99, n = streaming_latency(args.batches)
        print(f"streaming: micro-batch p50 {p50:.0f} ms, p99 {p99:.0f} ms over {n} batches")
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "events.jsonl")
        write_events(path, args.events)
        by_master: dict[str, dict[str, Any]] = {}
        for master in args.masters.split(","):
            proc = subprocess.run(
                [sys.executable, __file__, "--one", master, "--input", path, "--events", str(args.events)],
                capture_output=True,
                text=True,
                check=True,
            )
            by_master[master] = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"events: {args.events:,} (64 rooms)")
    print(
        f"{'workload':<26}{'master':<11}{'spark runner':>14}{'local engine':>14}{'DataFrame':>12}{'DF no output':>14}"
    )
    for name in WORKLOADS:
        for master, results in by_master.items():
            r = results[name]
            assert r["outputs"] == r["local_outputs"], f"{name}: Spark and local outputs differ in count"
            assert r["dataframe_outputs"] in (None, r["outputs"]), f"{name}: the DataFrame gives other rows"
            df = "n/a" if r["dataframe"] is None else f"{r['dataframe']:,.0f}"
            noop = "n/a" if r["dataframe_noop"] is None else f"{r['dataframe_noop']:,.0f}"
            print(f"{name:<26}{master:<11}{r['spark_runner']:>14,.0f}{r['local']:>14,.0f}{df:>12}{noop:>14}")
    p50, p99, n = streaming_latency(args.batches)
    print(
        f"streaming (partitioned pattern, local[2], 200 events/file): micro-batch p50 {p50:.0f} ms, p99 {p99:.0f} ms over {n} batches"
    )


if __name__ == "__main__":
    main()
