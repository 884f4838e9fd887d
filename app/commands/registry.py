"""Registry commands: `cepheus db upgrade|current`, `cepheus apply FILE`, `cepheus export`.

Each takes `--config PATH` (default `conf/cepheus.toml` when it exists) and uses the
`[registry] url` of that configuration (environment overrides apply). Errors are messages,
never tracebacks. Register `db`, `apply` and `export` (or `COMMANDS`) on the main group.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click
import sqlalchemy.exc

from app import config as app_config
from app.declarative import (
    FORMATS,
    DeclarativeError,
    apply_file,
    dump_document,
    export_document,
    export_file,
    file_format,
)
from app.registry import Outcome, Registry
from app.registry import migrate as registry_migrate
from engine.errors import ConfigError

DEFAULT_CONFIG = Path("conf/cepheus.toml")
F = TypeVar("F", bound=Callable[..., Any])


def config_option(fn: F) -> F:
    return click.option(
        "--config",
        "config_path",
        type=click.Path(dir_okay=False),
        default=None,
        help=f"node configuration (default: {DEFAULT_CONFIG} if it exists)",
    )(fn)


def load_config(config_path: str | None) -> app_config.Config:
    if config_path is None and DEFAULT_CONFIG.is_file():
        config_path = str(DEFAULT_CONFIG)
    return app_config.load(config_path)


@contextmanager
def registry_from_config(config_path: str | None, *, check: bool = True) -> Iterator[Registry]:
    """The configured registry; configuration, schema and connection problems exit 1 with a message."""
    registry = None
    try:
        registry = Registry(load_config(config_path).registry.url)
        if check:
            registry.check_schema()
        yield registry
    except ConfigError as exc:
        click.echo(str(exc) if isinstance(exc, DeclarativeError) else f"error: {exc}", err=True)
        sys.exit(1)
    except sqlalchemy.exc.DBAPIError as exc:
        where = registry.engine.url.render_as_string(hide_password=True) if registry else "the registry"
        click.echo(f"error: registry {where}: {exc.orig}", err=True)
        sys.exit(1)
    except sqlalchemy.exc.ArgumentError as exc:
        click.echo(f"error: [registry] url: {exc}", err=True)
        sys.exit(1)
    finally:
        if registry is not None:
            registry.close()


@click.group("db")
def db() -> None:
    """The registry database: schema migrations."""


@db.command("upgrade")
@config_option
@click.option("--sql", is_flag=True, help="print the SQL for an empty database instead of running it")
def upgrade(config_path: str | None, sql: bool) -> None:
    """Migrate the registry schema to the newest version (safe while other nodes start)."""
    if sql:
        try:
            registry_migrate.upgrade_sql(load_config(config_path).registry.url)
        except ConfigError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(1)
        return
    with registry_from_config(config_path, check=False) as registry:
        before, after = registry.migrate()
        where = registry.engine.url.render_as_string(hide_password=True)
        if before == after:
            click.echo(f"registry {where}: schema already at {after}")
        else:
            click.echo(f"registry {where}: schema upgraded from {before or '(empty)'} to {after}")


@db.command("current")
@config_option
def current(config_path: str | None) -> None:
    """Print the registry's schema version and whether this code expects it."""
    with registry_from_config(config_path, check=False) as registry:
        version = registry.schema_version()
        head = registry_migrate.head()
        state = "up to date" if version == head else f"this code expects {head}"
        click.echo(f"{version or '(empty)'} ({state})")


@click.command("apply")
@click.argument("file", type=click.Path(dir_okay=False))
@config_option
@click.option("--dry-run", is_flag=True, help="check and report, then roll back")
def apply(file: str, config_path: str | None, dry_run: bool) -> None:
    """Create or update streams, plans, receivers, data sources, adapters and formatters from FILE.

    FILE is TOML or YAML (by extension); everything is applied in one transaction, and
    entries that match the registry are left alone ("unchanged").
    """
    with registry_from_config(config_path) as registry:
        results = apply_file(registry, file, dry_run=dry_run)
        for result in results:
            click.echo(str(result))
        counts = {o: sum(1 for r in results if r.outcome is o) for o in Outcome}
        summary = ", ".join(f"{n} {o}" for o, n in counts.items())
        suffix = " (dry run: nothing written)" if dry_run else f"; registry revision {registry.revision()}"
        click.echo(f"{file}: {summary}{suffix}")


@click.command("export")
@config_option
@click.option(
    "--format", "fmt", type=click.Choice(FORMATS), default=None, help="default: toml, or by --output"
)
@click.option("--output", "-o", type=click.Path(dir_okay=False), default=None, help="file (default: stdout)")
@click.option(
    "--plan-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="write each plan to DIR/<name>.siddhi and refer to it (needs --output)",
)
def export(config_path: str | None, fmt: str | None, output: str | None, plan_dir: str | None) -> None:
    """Write the registry (all but users) as a declarative file that `cepheus apply` takes back."""
    if plan_dir is not None and output is None:
        msg = "--plan-dir needs --output"
        raise click.UsageError(msg)
    with registry_from_config(config_path) as registry:
        if output is None:
            click.echo(dump_document(export_document(registry), fmt or "toml"), nl=False)
            return
        if fmt is not None and file_format(output) != fmt:
            msg = f"--output {output} is not a {fmt} file name (.toml, .yaml or .yml)"
            raise click.UsageError(msg)
        export_file(registry, output, plan_dir=plan_dir)
        click.echo(f"wrote {output}", err=True)


COMMANDS: tuple[click.Command, ...] = (db, apply, export)
