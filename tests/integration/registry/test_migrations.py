"""Registry migrations on SQLite, MariaDB and PostgreSQL: schema = models, idempotent, locked, guarded."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy.engine import make_url

from app.registry import Registry, SchemaError
from app.registry import migrate as registry_migrate
from app.registry.schema import VERSION_TABLE, metadata
from tests.support.databases import isolated_database


def test_migrate_creates_the_tables_the_models_describe(empty_registry: Registry) -> None:
    before, after = empty_registry.migrate()
    assert (before, after) == (None, registry_migrate.head())
    empty_registry.check_schema()
    with empty_registry.engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"version_table": VERSION_TABLE, "compare_type": True}
        )
        assert compare_metadata(context, metadata) == []
    assert empty_registry.revision() == 0


def test_migrating_an_up_to_date_registry_changes_nothing(registry: Registry) -> None:
    head = registry_migrate.head()
    assert registry.migrate() == (head, head)
    assert registry.schema_version() == head


def test_check_schema_refuses_an_empty_database(empty_registry: Registry) -> None:
    with pytest.raises(SchemaError, match="no schema yet; run `cepheus db upgrade`"):
        empty_registry.check_schema()


def test_a_schema_newer_than_the_code_is_refused(registry: Registry) -> None:
    with registry.engine.begin() as conn:
        conn.execute(sa.text(f"UPDATE {VERSION_TABLE} SET version_num = 'f00d_from_the_future'"))
    with pytest.raises(SchemaError, match="f00d_from_the_future, newer than this version"):
        registry.check_schema()
    with pytest.raises(SchemaError, match="refusing to touch it"):
        registry.migrate()
    assert registry.schema_version() == "f00d_from_the_future"


NODES = 5
# SQLite's race (switching a new file to WAL) is narrow: many rounds; the servers' locks: a few
ROUNDS = {"sqlite": 60, "mysql": 3, "postgresql": 3}
ROUNDS_SECONDS = 20.0  # on a slow machine fewer rounds, but at least MIN_ROUNDS
MIN_ROUNDS = 3


def _start_together(registry_url: str) -> None:
    """NODES registries on one empty database migrate at once: one migrates, the others find it done."""
    nodes = [Registry(registry_url) for _ in range(NODES)]
    start = threading.Barrier(len(nodes))
    results: list[tuple[str | None, str]] = []
    errors: list[BaseException] = []

    def start_node(registry: Registry) -> None:
        try:
            start.wait()
            results.append(registry.migrate())
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=start_node, args=(node,)) for node in nodes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    try:
        assert not any(thread.is_alive() for thread in threads), "a migration is stuck"
        assert errors == []
        head = registry_migrate.head()
        assert sorted(results, key=lambda r: r[0] or "") == [(None, head)] + [(head, head)] * (NODES - 1)
        nodes[0].check_schema()
        with nodes[0].engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM cep_revision")).scalar() == 1
    finally:
        for node in nodes:
            node.close()


@pytest.mark.timeout(300)
def test_nodes_starting_together_migrate_once(database_url: str, tmp_path: Path) -> None:
    """Repeated on fresh databases: on SQLite the first connections race to switch the file to WAL."""
    deadline = time.monotonic() + ROUNDS_SECONDS
    for round_ in range(ROUNDS[make_url(database_url).get_backend_name()]):
        if round_ >= MIN_ROUNDS and time.monotonic() > deadline:
            break
        if database_url.startswith("sqlite"):
            _start_together(f"sqlite:///{tmp_path / f'round{round_}.db'}")
        else:
            with isolated_database(database_url) as url:
                _start_together(url)


def test_a_registry_at_0001_upgrades_to_snapshots_keeping_its_entities(empty_registry: Registry) -> None:
    from alembic import command

    from app.registry import Attribute, StreamDefinition

    with empty_registry.engine.connect() as conn:
        conn.execution_options(**registry_migrate.WRITE)
        with conn.begin():
            command.upgrade(registry_migrate.alembic_config(conn), "0001_initial")
    stream = StreamDefinition("orders", "1.0.0", payload=(Attribute("n", "INT"),))
    empty_registry.put_stream(stream)
    revision = empty_registry.revision()
    assert empty_registry.migrate() == ("0001_initial", registry_migrate.head())
    assert registry_migrate.head() == "0007_lease_requirement"
    assert empty_registry.get_stream("orders:1.0.0") == stream
    assert empty_registry.revision() == revision
    with empty_registry.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM cep_snapshots")).scalar() == 0
        assert conn.execute(sa.text("SELECT count(*) FROM cep_members")).scalar() == 0
        assert conn.execute(sa.text("SELECT count(required_term) FROM cep_leases")).scalar() == 0
        assert conn.execute(sa.text("SELECT count(*) FROM cep_pins")).scalar() == 0
