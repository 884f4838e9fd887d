"""On-demand queries on a real `cepheus server` (MariaDB registry): a table-based plan fed
events over the API, read and changed through `POST /api/v1/plans/<name>/query` and through
`cepheus query`; a viewer may only read; a persistence-mode plan (with its input log) refuses
changes with 409 and still answers reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.console import api, plan_state
from tests.support.databases import isolated_database
from tests.support.nodes import ADMIN_PASSWORD, REPO, NodeProcess, wait_for

pytestmark = [pytest.mark.slow]

STREAM = {
    "name": "stock",
    "version": "1.0.0",
    "payload": [{"name": "symbol", "type": "STRING"}, {"name": "volume", "type": "LONG"}],
}
PLAN = """@Plan:name('{name}')
@Import('stock:1.0.0')
define stream In (symbol string, volume long);
@PrimaryKey('symbol')
define table Latest (symbol string, volume long);
from In select symbol, volume update or insert into Latest on Latest.symbol == symbol;
"""


def query(node: NodeProcess, plan: str, text: str, token: str | None = None) -> tuple[int, dict]:
    status, body = api(node, "POST", f"/plans/{plan}/query", {"query": text}, token)
    return status, body


def test_on_demand_queries_over_http_and_the_cli(tmp_path: Path, mysql_url: str) -> None:
    with isolated_database(mysql_url, "cep_ondemand") as registry:
        node = NodeProcess(tmp_path, registry)
        try:
            node.start()
            assert api(node, "POST", "/streams", STREAM)[0] == 201
            assert api(node, "POST", "/plans", {"text": PLAN.format(name="stocks")})[0] == 201
            logged = {"text": PLAN.format(name="logged"), "snapshot_interval_minutes": 60}
            assert api(node, "POST", "/plans", logged)[0] == 201
            for plan in ("stocks", "logged"):
                wait_for(lambda p=plan: plan_state(node, p) == "running", 20, f"plan {plan} to run")
            events = [["WSO2", 100], ["IBM", 200], ["WSO2", 150], ["ORCL", 50]]
            assert api(node, "POST", "/streams/stock:1.0.0/events", events) == (200, {"accepted": 4})

            read = "from Latest on volume >= 100 select symbol, volume order by symbol"
            wait_for(lambda: len(query(node, "stocks", read)[1].get("rows", [])) == 2, 10, "the events")
            assert query(node, "stocks", read) == (
                200,
                {"columns": ["symbol", "volume"], "rows": [["IBM", 200], ["WSO2", 150]]},
            )

            # a viewer reads but may not change
            assert (
                api(node, "POST", "/users", {"name": "vera", "password": "vera-pass-1", "role": "viewer"})[0]
                == 201
            )
            viewer = node.cli(
                "query", "stocks", "from Latest select count() as n", "--url", f"http://127.0.0.1:{node.console_port}",
                "--user", "vera", "--json", env={"CEPHEUS_PASSWORD": "vera-pass-1"},
            )  # fmt: skip
            assert json.loads(viewer.stdout) == {"columns": ["n"], "rows": [[3]]}
            refused = subprocess.run(
                [sys.executable, "-m", "app.cli", "query", "stocks", "delete Latest", "--url",
                 f"http://127.0.0.1:{node.console_port}", "--user", "vera"],
                capture_output=True, text=True, timeout=60, cwd=REPO, env={**os.environ, "CEPHEUS_PASSWORD": "vera-pass-1"},
            )  # fmt: skip
            assert refused.returncode == 1 and "only an admin may change a table" in refused.stderr
            assert len(query(node, "stocks", "from Latest")[1]["rows"]) == 3
            assert query(node, "stocks", "delete Latest") == (200, {"columns": [], "rows": []})

            # the CLI: a change, then the table as a table
            env = {"CEPHEUS_PASSWORD": ADMIN_PASSWORD}
            url = ["--url", f"http://127.0.0.1:{node.console_port}"]
            insert = (
                "select 'NEW' as symbol, 7L as volume update or insert into Latest on Latest.symbol == symbol"
            )
            assert node.cli("query", "stocks", insert, *url, env=env).stdout == "plan stocks: done\n"
            shown = node.cli("query", "stocks", "from Latest", *url, env=env).stdout
            assert shown == "symbol  volume\n------  ------\nNEW     7\n(1 row)\n"

            # a bad query: exit 1 with the position marked
            with pytest.raises(AssertionError, match=r"query:1:20: unknown attribute 'nope'"):
                node.cli("query", "stocks", "from Latest select nope", *url, env=env)

            # the persistence-mode plan: reads yes, changes no (they would bypass its input log)
            status, body = query(node, "logged", "from Latest select symbol order by symbol")
            assert (status, body["rows"]) == (200, [["IBM"], ["ORCL"], ["WSO2"]])
            status, body = query(node, "logged", "delete Latest on Latest.symbol == 'IBM'")
            assert status == 409 and body["error"].startswith("on-demand changes are not logged")
            assert len(query(node, "logged", "from Latest")[1]["rows"]) == 3
            assert query(node, "nowhere", "from Latest")[0] == 404
        finally:
            node.stop()
