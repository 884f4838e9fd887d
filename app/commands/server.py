"""`cepheus server`: run a node until SIGTERM or Ctrl-C."""

from __future__ import annotations

import logging
import os
import sys

import click
import sqlalchemy.exc

from app import config as app_config
from app.commands.registry import DEFAULT_CONFIG, config_option
from app.file_limits import raise_open_files_limit
from app.node import Node
from app.private_files import PRIVATE_UMASK
from engine.errors import CEPError

LOG_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


def setup_logging(level: str) -> None:
    logging.basicConfig(level=level.upper(), format=LOG_FORMAT, stream=sys.stderr, force=True)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per HTTP request
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)  # a line per request waiting for a worker
    logging.getLogger("alembic").setLevel(logging.WARNING)


@click.command("server")
@config_option
@click.option(
    "--port-offset", type=int, default=None, help="add N to every port (WSO2 style); overrides the config"
)
@click.option(
    "--discard-state",
    is_flag=True,
    help="persistence-mode plans start empty and their snapshots are deleted (a clean start)",
)
def server(config_path: str | None, port_offset: int | None, discard_state: bool) -> None:
    """Run a Cepheus node: receivers, execution plans and output adapters from the registry.

    The first start creates user `admin` with the password in CEPHEUS_ADMIN_PASSWORD, or a
    random one printed once in the log. SIGTERM stops it gracefully (after a final snapshot
    of every persistence-mode plan).
    """
    if config_path is None and DEFAULT_CONFIG.is_file():
        config_path = str(DEFAULT_CONFIG)
    overrides = {"node": {"port_offset": port_offset}} if port_offset is not None else None
    try:
        cfg = app_config.load(config_path, overrides=overrides)
    except CEPError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    setup_logging(cfg.node.log_level)
    os.umask(PRIVATE_UMASK)  # whatever the node creates (data dir, databases, TLS files) is private
    raise_open_files_limit(cfg)
    node = Node(
        cfg, admin_password=os.environ.get("CEPHEUS_ADMIN_PASSWORD") or None, discard_state=discard_state
    )
    try:
        node.run_until_signalled()
        if node.restart_requested:
            logging.getLogger("cepheus.node").info("restarting (requested from the console)")
            os.execv(sys.executable, [sys.executable, "-m", "app.cli", *sys.argv[1:]])
    except CEPError as exc:
        logging.getLogger("cepheus.node").error("cannot start: %s", exc)
        sys.exit(1)
    except sqlalchemy.exc.DBAPIError as exc:
        logging.getLogger("cepheus.node").error("cannot reach the registry: %s", exc.orig)
        sys.exit(1)
    except OSError as exc:
        logging.getLogger("cepheus.node").error("cannot start: %s", exc)
        sys.exit(1)
