"""`cepheus query PLAN QUERY`: an on-demand query on a plan running on a node.

Through the console API's `POST /api/v1/plans/<plan>/query` (`--url`, default the node's
HTTP port on 127.0.0.1 from the configuration, basic authentication as `cepheus snapshot
take`). Rows print as a table, or with `--json` as the API's `{"columns", "rows"}`. A query
that does not compile prints its errors with the query's line marked, and exits 1.
"""

from __future__ import annotations

import json
import sys
from typing import Any
from urllib.parse import quote

import click

import engine
from adapters.wording import counted
from app.commands.node_client import NodeRefused, post_json
from app.commands.registry import load_config
from app.commands.snapshot import node_options
from engine.errors import CEPError, Diagnostic


@click.command("query")
@click.argument("plan")
@click.argument("text", metavar="QUERY")
@node_options
@click.option(
    "--json", "as_json", is_flag=True, help='the reply as JSON: {"columns": [...], "rows": [[...]]}'
)
def query(
    plan: str,
    text: str,
    url: str | None,
    user: str,
    password: str | None,
    config_path: str | None,
    as_json: bool,
) -> None:
    """Run an on-demand QUERY on PLAN deployed on a running node: `from T [on ...] select ...`
    reads a table or named window; `delete T on ...`, `update T set ... on ...`,
    `select ... update or insert into T on ...` and `select ... insert into T` change a table
    (an admin's right)."""
    if password is None:
        msg = "give the password with --password or CEPHEUS_PASSWORD"
        raise click.UsageError(msg)
    try:
        if url is None:
            url = f"http://127.0.0.1:{load_config(config_path).console_port}"
        reply = post_json(url, f"/api/v1/plans/{quote(plan, safe='')}/query", user, password, {"query": text})
    except NodeRefused as exc:
        click.echo(_refusal(exc, text), err=True)
        sys.exit(1)
    except CEPError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    if as_json:
        click.echo(json.dumps(reply))
    elif _changes(text):
        click.echo(f"plan {plan}: done")
    else:
        click.echo(table(reply["columns"], reply["rows"]))


def _changes(text: str) -> bool:
    try:
        return engine.parse_query(text).changes
    except engine.QueryError:
        return False


def _refusal(exc: NodeRefused, text: str) -> str:
    """`error: ...`, or for a query that does not compile every error with its line marked."""
    reply = exc.reply
    errors = reply.get("errors") if isinstance(reply, dict) else None
    if not errors:
        return f"error: {exc}"
    found = [
        Diagnostic(
            e["message"],
            e["line"],
            e["col"],
            e.get("end_line", e["line"]),
            e.get("end_col", e["col"] + 1),
            e.get("hint"),
        )
        for e in errors
    ]
    return "\n".join(d.format(text, "query") for d in found)


def table(columns: list[str], rows: list[list[Any]]) -> str:
    """Columns padded to their widest cell, a rule under the names, and the count of rows."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip(),
        "  ".join("-" * w for w in widths),
        *("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells),
    ]
    return "\n".join([*lines, f"({counted(len(rows), 'row')})"])


def _cell(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
