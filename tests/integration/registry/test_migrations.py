"""Registry migrations on SQLite, MariaDB and PostgreSQL: schema = models, idempotent, locked, guarded."""

from __future__ import annotations

import threading

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from app.registry import Registry, SchemaError
from app.registry import migrate as registry_migrate
from app.registry.schema import VERSION_TABLE, metadata


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


@pytest.mark.timeout(120)
def test_nodes_starting_together_migrate_once(registry_url: str) -> None:
    nodes = [Registry(registry_url) for _ in range(3)]
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
        assert sorted(results, key=lambda r: r[0] or "") == [(None, head), (head, head), (head, head)]
        nodes[0].check_schema()
        with nodes[0].engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM cep_revision")).scalar() == 1
    finally:
        for node in nodes:
            node.close()
