"""`cepheus spark status CHECKPOINT_DIR` (or `--plan NAME`): a plan deployed on Spark
Structured Streaming, as its deployment last wrote it into its checkpoint directory
(app/spark/streaming.py): the Spark application, the inflow and outflow, and per query (one
per execution group) its state, last micro-batch, rows/s, batch duration and state size.
`--plan` finds the directory of a plan a node drives under the node's `[spark] dir` (its
current text's: the newest status). Needs no Spark. Register `spark` on the main group.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import click

from app.commands.registry import config_option, load_config
from app.spark.driver import CHECKPOINTS, plan_directory
from app.spark.streaming import STATUS_FILE
from engine.errors import ConfigError

HEADERS = (
    "QUERY",
    "STATE",
    "BATCH",
    "IN ROWS/S",
    "PROCESSED ROWS/S",
    "BATCH MS",
    "STATE ROWS",
    "STATE BYTES",
)


def read_status(checkpoint_dir: str) -> dict[str, Any]:
    path = os.path.join(checkpoint_dir, STATUS_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            status: dict[str, Any] = json.load(f)
    except FileNotFoundError:
        msg = f"{checkpoint_dir}: no {STATUS_FILE} there; is it the checkpoint directory of a plan deployed on Spark?"
        raise click.ClickException(msg) from None
    except (OSError, json.JSONDecodeError) as exc:
        msg = f"cannot read {path}: {exc}"
        raise click.ClickException(msg) from None
    return status


def plan_checkpoints(plan: str, config_path: str | None) -> str:
    """The checkpoint directory of `plan` under the node's `[spark] dir`: of the text that
    wrote its status last (each text of a plan has a directory of its own)."""
    try:
        base = plan_directory(load_config(config_path).spark_dir, plan)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    found = sorted(base.glob(f"*/{CHECKPOINTS}/{STATUS_FILE}"), key=lambda p: p.stat().st_mtime)
    if not found:
        msg = (
            f"no Spark status of plan {plan} under {base}: is it a plan with distributed_mode 'spark', "
            "deployed on a node with [spark] enabled and this configuration (--config)?"
        )
        raise click.ClickException(msg)
    return str(found[-1].parent)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return str(value)


@click.group()
def spark() -> None:
    """Plans deployed on Apache Spark."""


@spark.command()
@click.argument("checkpoint_dir", type=click.Path(file_okay=False), required=False)
@click.option("--plan", help="a plan a node drives on Spark: its directory under the node's [spark] dir")
@config_option
@click.option("--json", "as_json", is_flag=True, help="print the status as JSON")
def status(checkpoint_dir: str | None, plan: str | None, config_path: str | None, as_json: bool) -> None:
    """Show a Spark deployment's application and queries from CHECKPOINT_DIR (or --plan's)."""
    if (checkpoint_dir is None) == (plan is None):
        msg = "give either CHECKPOINT_DIR or --plan NAME (with the node's --config)"
        raise click.UsageError(msg)
    st = read_status(
        checkpoint_dir if checkpoint_dir is not None else plan_checkpoints(str(plan), config_path)
    )
    if as_json:
        click.echo(json.dumps(st, indent=1))
        return
    app = st.get("application", {})
    age = (time.time() * 1000 - st.get("updated_ms", 0)) / 1000
    click.echo(
        f"plan {st.get('plan')}: Spark application {app.get('id')} ({app.get('name')}) on {app.get('master')}"
    )
    click.echo(f"inflow: {st.get('inflow')}   outflow: {', '.join(st.get('outflow', [])) or '-'}")
    click.echo(f"status written {age:.0f} s ago")
    rows = [
        (
            q["name"],
            "active" if q["active"] else ("failed" if q.get("error") else "stopped"),
            _cell(q.get("batch")),
            _cell(q.get("input_rows_per_second")),
            _cell(q.get("processed_rows_per_second")),
            _cell(q.get("batch_duration_ms")),
            _cell(q.get("state_rows")),
            _cell(q.get("state_bytes")),
        )
        for q in st.get("queries", [])
    ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(HEADERS)]
    click.echo("  ".join(h.ljust(w) for h, w in zip(HEADERS, widths, strict=True)))
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
    for q in st.get("queries", []):
        if q.get("error"):
            click.echo(f"{q['name']} failed: {q['error']}", err=True)
    if any(not q["active"] for q in st.get("queries", [])):
        sys.exit(3)
