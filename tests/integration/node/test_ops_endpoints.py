"""`/metrics`, `/livez` and `/readyz` of a real `cepheus server` process.

Events go in over HTTP, run through a plan into an SQLite table (RDBMS adapter), and the
scraped counters must equal what was sent, emitted and written. With a PostgreSQL registry
the test makes the registry unreadable (its schema renamed away) and back: `/readyz` says why
it is not ready meanwhile, and ready again after.
"""

from __future__ import annotations

import base64
import json
import sqlite3
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy.engine import make_url

from tests.support.databases import isolated_database
from tests.support.nodes import ADMIN_PASSWORD, NodeProcess, node_config, provision, running_node, wait_for

pytestmark = pytest.mark.timeout(120)

PLAN = """@Plan:name('hot')
@Import('temps:1.0.0')
define stream temps (room string, celsius double);
@Export('alerts:1.0.0')
define stream alerts (room string, celsius double);
from temps[celsius > 30] select room, celsius insert into alerts;
"""

DOCUMENT = """
[[streams]]
name = "temps"
payload = [{{ name = "room", type = "STRING" }}, {{ name = "celsius", type = "DOUBLE" }}]

[[streams]]
name = "alerts"
payload = [{{ name = "room", type = "STRING" }}, {{ name = "celsius", type = "DOUBLE" }}]

[[plans]]
name = "hot"
file = "hot.siddhi"

[[datasources]]
name = "out"
url = "sqlite:///{db}"

[[adapters]]
name = "alertTable"
type = "rdbms"
datasource = "out"
table = "alerts"
mode = "insert"
create_table = true
columns = [{{ name = "room", type = "VARCHAR(20)" }}, {{ name = "celsius", type = "DOUBLE PRECISION" }}]

[[formatters]]
name = "alertRows"
stream = "alerts:1.0.0"
adapter = "alertTable"
type = "map"
"""

# three bundles: 9 readings, 5 of them above 30 °C
BUNDLES: list[list[tuple[str, float]]] = [
    [("kitchen", 31.5), ("hall", 20.0), ("attic", 40.0)],
    [("cellar", 12.0), ("attic", 41.0)],
    [("kitchen", 33.0), ("hall", 21.0), ("attic", 39.5), ("porch", 30.0)],
]
SENT = sum(len(b) for b in BUNDLES)
HOT = sum(1 for b in BUNDLES for _, celsius in b if celsius > 30)

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def get(node: NodeProcess, path: str) -> tuple[int, str, str]:
    """(status, content type, body) of GET `path`, without credentials."""
    url = f"http://127.0.0.1:{node.console_port}{path}"
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:  # noqa: S310 - test URL
            return reply.status, reply.headers["Content-Type"], reply.read().decode()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.headers["Content-Type"], exc.read().decode()


def scrape(node: NodeProcess) -> Samples:
    status, _, text = get(node, "/metrics")
    assert status == 200, text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def post_events(node: NodeProcess, stream_id: str, events: list[tuple[str, float]]) -> Any:
    request = urllib.request.Request(
        f"http://127.0.0.1:{node.console_port}/events/{stream_id}",
        data=json.dumps(events).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Authorization": "Basic " + base64.b64encode(f"admin:{ADMIN_PASSWORD}".encode()).decode(),
        },
    )
    with urllib.request.urlopen(request, timeout=10) as reply:  # noqa: S310 - test URL
        return json.loads(reply.read())


def table_rows(db: Path) -> int:
    with closing(sqlite3.connect(db)) as conn:
        return int(conn.execute("SELECT count(*) FROM alerts").fetchone()[0])


@pytest.fixture
def started(tmp_path: Path) -> Iterator[tuple[NodeProcess, Path]]:
    registry = f"sqlite:///{tmp_path / 'registry.db'}"
    db = tmp_path / "out.db"
    provision(registry, DOCUMENT.format(db=db), tmp_path, {"hot.siddhi": PLAN})
    node = NodeProcess(tmp_path, registry)
    node.start()
    yield node, db
    assert node.stop() == 0


def test_metrics_count_what_was_received_emitted_and_written(started: tuple[NodeProcess, Path]) -> None:
    node, db = started
    assert get(node, "/livez")[::2] == (200, '{"status":"live"}\n')
    assert get(node, "/readyz")[::2] == (200, '{"status":"ready"}\n')
    for bundle in BUNDLES:
        assert post_events(node, "temps:1.0.0", bundle) == {"accepted": len(bundle)}
    written = ("cepheus_adapter_written_total", (("adapter", "alertTable"),))
    samples = wait_for(lambda: (s := scrape(node)).get(written) == HOT and s, 20, "the adapter to write")
    assert samples[("cepheus_events_received_total", (("stream", "temps:1.0.0"),))] == SENT
    assert samples[("cepheus_events_emitted_total", (("plan", "hot"), ("stream", "alerts:1.0.0")))] == HOT
    assert samples[("cepheus_adapter_pending", (("adapter", "alertTable"),))] == 0
    assert samples[("cepheus_adapter_rejected_total", (("adapter", "alertTable"),))] == 0
    assert samples[("cepheus_plan_send_duration_seconds_count", (("plan", "hot"),))] == len(BUNDLES)
    assert samples[("cepheus_plan_state", (("plan", "hot"), ("state", "running")))] == 1
    assert samples[("cepheus_registry_reachable", ())] == 1
    assert table_rows(db) == HOT
    _, content_type, _ = get(node, "/metrics")
    assert content_type.startswith("text/plain; version=")


def test_metrics_need_a_login_when_the_console_says_so(tmp_path: Path) -> None:
    registry = f"sqlite:///{tmp_path / 'registry.db'}"
    config = node_config(tmp_path, registry, console={"metrics_public": False})
    with running_node(config) as node:
        assert node.web is not None
        url = f"http://127.0.0.1:{node.web.port}/metrics"
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url, timeout=10)  # noqa: S310 - test URL
        refused.value.close()
        assert refused.value.code == 401
        request = urllib.request.Request(url)
        token = base64.b64encode(f"admin:{ADMIN_PASSWORD}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
        with urllib.request.urlopen(request, timeout=10) as reply:  # noqa: S310 - test URL
            names = {f.name for f in text_string_to_metric_families(reply.read().decode())}
        assert "cepheus_registry_reachable" in names


@pytest.fixture
def postgres_registry(postgres_url: str) -> Iterator[str]:
    with isolated_database(postgres_url, "cep_ops") as url:
        yield url


def rename_schema(url: str, old: str, new: str) -> None:
    admin = sa.create_engine(make_url(url).difference_update_query(["options"]), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f"ALTER SCHEMA {old} RENAME TO {new}"))
    finally:
        admin.dispose()


@pytest.mark.postgres
def test_readyz_is_503_while_the_registry_cannot_be_read(tmp_path: Path, postgres_registry: str) -> None:
    db = tmp_path / "out.db"
    provision(postgres_registry, DOCUMENT.format(db=db), tmp_path, {"hot.siddhi": PLAN})
    node = NodeProcess(tmp_path, postgres_registry)
    node.start()
    schema = make_url(postgres_registry).query["options"]
    assert isinstance(schema, str) and schema.startswith("-csearch_path=")
    schema = schema.removeprefix("-csearch_path=")
    try:
        assert get(node, "/readyz")[0] == 200
        rename_schema(postgres_registry, schema, f"{schema}_away")
        try:
            status, _, body = wait_for(
                lambda: (r := get(node, "/readyz"))[0] == 503 and r, 20, "/readyz to say not ready"
            )
            assert json.loads(body) == {"status": "not ready", "reasons": ["the registry cannot be read"]}
            assert get(node, "/livez")[0] == 200
            assert scrape(node)[("cepheus_registry_reachable", ())] == 0
        finally:
            rename_schema(postgres_registry, f"{schema}_away", schema)
        wait_for(lambda: get(node, "/readyz")[0] == 200, 20, "/readyz to say ready again")
        assert scrape(node)[("cepheus_registry_reachable", ())] == 1
    finally:
        assert node.stop() == 0
