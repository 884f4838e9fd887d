"""`cepheus snapshot list|discard|take|restore`: snapshots of plans' state.

`list [PLAN]` and `discard PLAN (--id N | --all)` read the registry of the node
configuration (`--config`, as the registry commands) and need no running node. `take PLAN`
and `restore PLAN ID` ask a running node (`--url`, default its HTTP port on 127.0.0.1 from
the configuration) through `app.node.snapshot_requests`. Register `snapshot` on the main group.
"""

from __future__ import annotations

import json
import sys
from typing import Any
from urllib.parse import quote

import click

from adapters.wording import counted
from app.commands.node_client import post_json
from app.commands.registry import config_option, load_config, registry_from_config
from app.persistence.snapshot_keeper import describe
from app.registry.snapshots import RegistrySnapshots
from engine import RestoreReport
from engine.errors import CEPError
from ha.ports import SnapshotMeta

HEADERS = ("ID", "PLAN", "CREATED (UTC)", "NODE", "SIZE", "INPUT POSITION", "STATE FORMAT")


def size_text(size: int) -> str:
    """`size` bytes as people read it: 512 B, 1.5 KiB, 20.0 MiB."""
    value = float(size)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024:
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def _row(meta: SnapshotMeta) -> tuple[str, ...]:
    return (
        str(meta.id),
        meta.plan,
        meta.created_at.strftime("%Y-%m-%d %H:%M:%S"),
        meta.node,
        size_text(meta.size),
        "-" if meta.input_position is None else str(meta.input_position),
        str(meta.state_format),
    )


def table(metas: list[SnapshotMeta]) -> str:
    rows = [HEADERS, *(_row(m) for m in metas)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADERS))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows
    )


@click.group("snapshot")
def snapshot() -> None:
    """Snapshots of plans' state kept in the registry."""


@snapshot.command("list")
@click.argument("plan", required=False)
@config_option
@click.option("--json", "as_json_", is_flag=True, help="a JSON list of objects instead of a table")
def list_(plan: str | None, config_path: str | None, as_json_: bool) -> None:
    """List the snapshots of PLAN (default: of every plan), newest first."""
    with registry_from_config(config_path) as registry:
        store = RegistrySnapshots(registry)
        metas = store.list_all() if plan is None else store.list(plan)
    if as_json_:
        click.echo(json.dumps([m.to_json() for m in metas], indent=2))
    elif not metas:
        click.echo("no snapshots" if plan is None else f"plan {plan!r} has no snapshots")
    else:
        click.echo(table(metas))


@snapshot.command("discard")
@click.argument("plan")
@click.option("--id", "snapshot_id", type=int, default=None, help="the snapshot to discard")
@click.option("--all", "all_", is_flag=True, help="discard every snapshot of PLAN")
@config_option
def discard(plan: str, snapshot_id: int | None, all_: bool, config_path: str | None) -> None:
    """Delete one snapshot of PLAN (--id N) or all of them (--all), without asking."""
    if (snapshot_id is None) == (not all_):
        msg = "give either --id N or --all"
        raise click.UsageError(msg)
    with registry_from_config(config_path) as registry:
        store = RegistrySnapshots(registry)
        metas = store.list(plan)
        if snapshot_id is not None:
            metas = [m for m in metas if m.id == snapshot_id]
            if not metas:
                click.echo(
                    f"error: plan {plan!r} has no snapshot {snapshot_id} (see `cepheus snapshot list {plan}`)",
                    err=True,
                )
                sys.exit(1)
        discarded = [m for m in metas if m.id is not None and store.discard(plan, m.id)]
    for meta in discarded:
        taken = meta.created_at.strftime("%Y-%m-%d %H:%M:%S")
        click.echo(
            f"discarded snapshot {meta.id} of plan {plan!r} (taken {taken} UTC, {size_text(meta.size)})"
        )
    if snapshot_id is None:
        click.echo(f"plan {plan!r}: {counted(len(discarded), 'snapshot')} discarded")


def node_options(fn: Any) -> Any:
    """`--url`, `--user`, `--password` and `--config` of the commands that ask a running node."""
    for option in reversed(
        (
            click.option(
                "--url",
                default=None,
                help="the node's HTTP port (default: http://127.0.0.1:<console port + offset of --config>)",
            ),
            click.option("--user", "--username", "user", default="admin", show_default=True),
            click.option(
                "--password", envvar="CEPHEUS_PASSWORD", default=None, help="default: $CEPHEUS_PASSWORD"
            ),
            config_option,
        )
    ):
        fn = option(fn)
    return fn


def _ask_node(url: str | None, config_path: str | None, path: str, user: str, password: str | None) -> Any:
    if password is None:
        msg = "give the password with --password or CEPHEUS_PASSWORD"
        raise click.UsageError(msg)
    try:
        if url is None:
            url = f"http://127.0.0.1:{load_config(config_path).console_port}"
        return post_json(url, path, user, password)
    except CEPError as exc:  # NodeRefused among them
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)


@snapshot.command("take")
@click.argument("plan")
@node_options
def take(plan: str, url: str | None, user: str, password: str | None, config_path: str | None) -> None:
    """Snapshot PLAN on a running node now and store it in the registry."""
    meta = _ask_node(url, config_path, f"/api/v1/plans/{quote(plan, safe='')}/snapshots", user, password)
    click.echo(f"snapshot {meta['id']} of plan {plan} taken: {meta['size']:,} bytes")


@snapshot.command("restore")
@click.argument("plan")
@click.argument("snapshot_id", metavar="ID", type=int)
@node_options
def restore(
    plan: str, snapshot_id: int, url: str | None, user: str, password: str | None, config_path: str | None
) -> None:
    """Load snapshot ID into PLAN running on a node; a snapshot that does not load changes nothing."""
    path = f"/api/v1/plans/{quote(plan, safe='')}/snapshots/{snapshot_id}/restore"
    reply = _ask_node(url, config_path, path, user, password)
    report = RestoreReport(
        kept=list(reply["kept"]),
        fresh=list(reply["fresh"]),
        unfit=[(u["part"], u["reason"]) for u in reply["unfit"]],
    )
    click.echo(f"plan {plan} restored from snapshot {snapshot_id}: {describe(report)}")
