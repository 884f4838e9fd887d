"""Alembic environment of the Cepheus registry (SQLite, MySQL/MariaDB, PostgreSQL).

Configured from code, not an ini file: `app.registry.migrate` points Alembic here and hands
over an open connection (`config.attributes["connection"]`) on which it already holds the
migration lock and a transaction. Offline mode (`cepheus db upgrade --sql`) renders the SQL for
the URL in `sqlalchemy.url` instead. Imports the registry's tables for autogenerate.
"""

from __future__ import annotations

from alembic import context

from app.registry.schema import VERSION_TABLE, metadata

config = context.config


def _options(dialect_name: str) -> dict[str, object]:
    return {
        "target_metadata": metadata,
        "version_table": VERSION_TABLE,
        "compare_type": True,
        # SQLite alters tables by copying them; later versions use op.batch_alter_table
        "render_as_batch": dialect_name == "sqlite",
    }


def run_offline() -> None:
    url = config.get_main_option("sqlalchemy.url")
    dialect_name = (url or "").split(":", 1)[0].split("+", 1)[0]
    context.configure(url=url, literal_binds=True, **_options(dialect_name))  # type: ignore[arg-type]
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        msg = "run migrations through `cepheus db upgrade` (app.registry.Registry.migrate)"
        raise RuntimeError(msg)
    context.configure(connection=connection, **_options(connection.dialect.name))  # type: ignore[arg-type]
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
