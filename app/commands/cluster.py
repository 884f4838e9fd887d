"""`cepheus cluster status|move|unpin|drain|accept-loss`: the redundant-node cluster, through the registry.

`status` shows each member as it last reported itself and each redundant plan's notifier
lease; `move PLAN NODE` pins a plan's notifier to a member (it moves within a second or two,
once that member has caught up; the pin holds while the member is alive), `unpin PLAN` gives it
back to placement; `drain NODE` makes a member hand its plans over and take none unless no
other member can (`--undo` ends it); `accept-loss PLAN` lets a member take over a plan whose dead
notifier acknowledged input no other member holds. None needs a running node: the members read
the registry.
"""

from __future__ import annotations

import json

import click

from app.commands.registry import config_option, registry_from_config
from app.registry.leases import RegistryLeases
from app.registry.members import RegistryMembers


@click.group("cluster")
def cluster() -> None:
    """Members, notifier leases, moves and drains of redundant plans."""


@cluster.command("status")
@config_option
@click.option("--json", "as_json_", is_flag=True, help="one JSON object instead of tables")
def status(config_path: str | None, as_json_: bool) -> None:
    """Members as they last reported themselves, and who notifies for each redundant plan."""
    with registry_from_config(config_path) as registry:
        members = RegistryMembers(registry).list()
        pins = RegistryMembers(registry).pins()
        leases = RegistryLeases(registry).all()
    if as_json_:
        document = {
            "members": [m.to_json() for m in members],
            "leases": [
                {
                    "plan": x.plan,
                    "holder": x.holder,
                    "epoch": x.epoch,
                    "ttl_ms": x.ttl_ms,
                    "pinned": pins.get(x.plan),
                    "required": None
                    if x.required is None
                    else {"term": x.required.term, "position": x.required.position},
                }
                for x in leases
            ],
        }
        click.echo(json.dumps(document, indent=2))
        return
    if not members:
        click.echo("no cluster member has reported to this registry")
    for m in members:
        seen = f"{m.age_ms / 1000:.1f} s ago"
        views = ", ".join(f"{other} {state}" for other, state in m.view.items() if other != m.node)
        drain = " DRAINING" if m.draining else ""
        click.echo(f"member {m.node} at {m.address}, reported {seen}{drain}; sees {views or 'no one'}")
    for lease in leases:
        state = f"valid {lease.ttl_ms} ms more" if lease.ttl_ms else "expired"
        pin = f", pinned to {pins[lease.plan]}" if lease.plan in pins else ""
        need = lease.required
        needs = f"; a new notifier must hold position {need.position} of term {need.term}" if need else ""
        click.echo(f"plan {lease.plan}: notifier {lease.holder} (epoch {lease.epoch}, {state}{pin}){needs}")


@cluster.command("move")
@click.argument("plan")
@click.argument("node")
@config_option
def move(plan: str, node: str, config_path: str | None) -> None:
    """Make NODE the notifier of PLAN (once it has caught up), and keep it there while it is alive."""
    with registry_from_config(config_path) as registry:
        members = {m.node for m in RegistryMembers(registry).list()}
        if node not in members:
            known = ", ".join(sorted(members)) or "none"
            msg = f"no cluster member {node!r} has reported to this registry (members: {known})"
            raise click.ClickException(msg)
        RegistryMembers(registry).pin(plan, node)
    click.echo(f"plan {plan}: notifier pinned to {node}")


@cluster.command("unpin")
@click.argument("plan")
@config_option
def unpin(plan: str, config_path: str | None) -> None:
    """Let placement choose PLAN's notifier again."""
    with registry_from_config(config_path) as registry:
        found = RegistryMembers(registry).unpin(plan)
    click.echo(f"plan {plan}: {'unpinned' if found else 'was not pinned'}")


@cluster.command("drain")
@click.argument("node")
@click.option("--undo", is_flag=True, help="end the drain: the member takes plans again")
@config_option
def drain(node: str, undo: bool, config_path: str | None) -> None:
    """Make NODE hand its plans to other members (before maintenance), or stop that with --undo."""
    with registry_from_config(config_path) as registry:
        if not RegistryMembers(registry).drain(node, not undo):
            msg = f"no cluster member {node!r} has reported to this registry"
            raise click.ClickException(msg)
    click.echo(f"member {node}: {'no longer draining' if undo else 'draining'}")


@cluster.command("accept-loss")
@click.argument("plan")
@config_option
def accept_loss(plan: str, config_path: str | None) -> None:
    """Let any caught-up member take PLAN over although none holds all its dead notifier acknowledged."""
    with registry_from_config(config_path) as registry:
        leases = RegistryLeases(registry)
        lease = leases.current(plan)
        required = leases.accept_loss(plan)
    if required is None:
        if lease is None:
            msg = f"plan {plan!r} has no notifier lease"
            raise click.ClickException(msg)
        if lease.ttl_ms > 0:
            msg = f"plan {plan}: its notifier {lease.holder} holds the lease: nothing is lost"
            raise click.ClickException(msg)
        click.echo(f"plan {plan}: its lease required nothing: a caught-up member takes it")
        return
    click.echo(
        f"plan {plan}: input its last notifier {lease.holder if lease else '?'} acknowledged, up to position "
        f"{required.position} of term {required.term}, may be lost; a caught-up member takes over"
    )
