"""The console's Spark page (WSO2 CEP 4.0's "Distributed Deployment Status") and
`GET /api/v1/spark`: what the node reports of the plans it drives on Spark, or that it drives none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.unit.app.console.conftest import console_of


def _rooms(active: bool = True, error: str | None = None) -> dict[str, Any]:
    query = {
        "name": "cepheus_rooms_main",
        "id": "q-1",
        "active": active,
        "error": error,
        "batch": 7,
        "input_rows_per_second": 120.5,
        "processed_rows_per_second": 900.0,
        "batch_duration_ms": 140,
        "state_rows": 5,
        "state_bytes": 4096,
    }
    return {
        "plan": "rooms",
        "state": "spark" if active else "failed",
        "message": "on Spark local[2]: 1 queries active",
        "master": "local[2]",
        "directory": "/var/spark/rooms/abc",
        "application": {"id": "local-1", "name": "cepheus", "master": "local[2]"},
        "inflow": "/var/spark/rooms/abc/in",
        "outflow": ["Hot", "Rise"],
        "queries": [query],
    }


def test_the_page_and_the_api_show_each_query(tmp_path: Path) -> None:
    with console_of(tmp_path, spark=lambda: {"rooms": _rooms()}) as console:
        reply = console.client().get("/api/v1/spark", headers=console.viewer())
        assert reply.status_code == 200
        assert reply.get_json() == {"enabled": True, "plans": {"rooms": _rooms()}}
        client, _ = console.session()
        page = client.get("/spark").get_data(as_text=True)
        assert "Distributed deployment status" in page
        assert (
            '<tr data-query="cepheus_rooms_main"><td>cepheus_rooms_main</td><td><span class="state active">active</span>'
            in page
        )
        for shown in ("local-1 (cepheus)", "/var/spark/rooms/abc/in", "Hot, Rise", "120.5", "900.0", "4096"):
            assert shown in page


def test_a_failed_query_shows_its_reason(tmp_path: Path) -> None:
    with console_of(tmp_path, spark=lambda: {"rooms": _rooms(False, "ValueError: bad row")}) as console:
        client, _ = console.session()
        page = client.get("/spark?plan=rooms").get_data(as_text=True)
        assert '<span class="state failed">failed</span> ValueError: bad row' in page


def test_a_node_without_spark_says_how_to_turn_it_on(tmp_path: Path) -> None:
    with console_of(tmp_path) as console:
        reply = console.client().get("/api/v1/spark", headers=console.admin())
        assert reply.get_json() == {"enabled": False, "plans": {}}
        client, _ = console.session()
        page = client.get("/spark").get_data(as_text=True)
        assert "<code>[spark] enabled</code> is off" in page
