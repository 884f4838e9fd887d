"""`POST /api/v1/plans/<name>/query`: on-demand queries through the console's API, on a real
engine runtime, with its authorization (reads: any user; changes: an admin), its refusals and
every reply checked against the OpenAPI document."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import engine
from app.console.errors import OnDemandRefused
from tests.unit.app.console.conftest import Console_, console_of
from tests.unit.app.console.test_api import call

PLAN = """
define stream StockStream (symbol string, price double, volume long);
@PrimaryKey('symbol') define table StockTable (symbol string, price double, volume long);
from StockStream insert into StockTable;
"""
URL = "/plans/stocks/query"
TEMPLATE = "/plans/{name}/query"


@pytest.fixture
def runtime() -> engine.Runtime:
    rt = engine.compile(PLAN, start_time=1000)
    rt.send("StockStream", [("WSO2", 55.5, 100), ("IBM", 75.5, 200)], timestamps=1000)
    return rt


@pytest.fixture
def console(tmp_path: Path, runtime: engine.Runtime) -> Iterator[Console_]:
    def query(name: str, text: str) -> tuple[list[str], list[list[Any]]]:
        if name == "logged":
            raise OnDemandRefused("on-demand changes are not logged: plan 'logged' ...")
        if name != "stocks":
            msg = f"plan {name!r} is not deployed on this node"
            raise LookupError(msg)
        prepared = runtime.prepare_query(text)
        return prepared.columns, [list(e.data) for e in runtime.run_query(prepared)]

    with console_of(tmp_path, query=query) as built:
        yield built


def ask(console: Console_, text: Any, headers: dict[str, str], url: str = URL) -> tuple[int, Any]:
    return call(console, "POST", url, TEMPLATE, headers, json={"query": text})


def test_a_viewer_reads(console: Console_) -> None:
    status, body = ask(console, "from StockTable on volume > 150 select symbol, price", console.viewer())
    assert status == 200
    assert body == {"columns": ["symbol", "price"], "rows": [["IBM", 75.5]]}
    status, body = ask(console, "from StockTable select sum(volume) as total", console.admin())
    assert (status, body) == (200, {"columns": ["total"], "rows": [[300]]})


def test_changes_need_an_admin(console: Console_, runtime: engine.Runtime) -> None:
    status, body = ask(console, "delete StockTable on StockTable.symbol == 'IBM'", console.viewer())
    assert status == 403 and "viewer" in body["error"]
    assert len(runtime.query("from StockTable")) == 2  # nothing ran
    status, body = ask(console, "delete StockTable on StockTable.symbol == 'IBM'", console.admin())
    assert (status, body) == (200, {"columns": [], "rows": []})
    status, body = ask(
        console,
        "select 'ORCL' as symbol, 1.5 as price, 7L as volume update or insert into StockTable "
        "on StockTable.symbol == symbol",
        console.admin(),
    )
    assert status == 200
    _, body = ask(console, "from StockTable select symbol order by symbol", console.viewer())
    assert body["rows"] == [["ORCL"], ["WSO2"]]


def test_a_bad_query_is_422_with_positions(console: Console_) -> None:
    status, body = ask(console, "from StockTable\nselect nope", console.viewer())
    assert status == 422 and body["field"] == "query"
    assert body["errors"][0] | {"hint": None} == {
        "line": 2,
        "col": 8,
        "end_line": 2,
        "end_col": 12,
        "message": "unknown attribute 'nope'",
        "hint": None,
    }
    assert body["error"].startswith("query: 2:8: unknown attribute")
    status, body = ask(console, "from StockTable select", console.viewer())
    assert status == 422 and body["errors"][0]["col"] == 23
    # a viewer's change that does not parse is a 422, not a 403: the text says nothing yet
    status, _ = ask(console, "delete", console.viewer())
    assert status == 422


def test_refusals(console: Console_, tmp_path: Path) -> None:
    status, body = ask(console, "from StockTable", console.viewer(), url="/plans/nope/query")
    assert status == 404 and body["error"] == "plan 'nope' is not deployed on this node"
    status, body = ask(console, "delete StockTable", console.admin(), url="/plans/logged/query")
    assert status == 409 and body["error"].startswith("on-demand changes are not logged")
    for bad in ("", None, 5):
        status, body = ask(console, bad, console.viewer())
        assert status == 422 and body["field"] == "query"
    reply = console.client().post(f"/api/v1{URL}", json={"query": "from StockTable"})
    assert reply.status_code == 401
    with console_of(tmp_path / "bare") as bare:
        status, body = ask(bare, "from StockTable", bare.admin())
    assert status == 503
