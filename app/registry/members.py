"""`RegistryMembers`: cluster members as each last reported itself, drains and notifier pins.

Each member writes its own `cep_members` row about once a second (`report`): where it is
reached, the database's clock when it wrote (`seen_ms`), and its view of the others. The
console and `cepheus cluster status` read them; members never decide anything from them (the
heartbeats and the leases do). An operator marks a member `draining` (it hands its plans over
and takes none unless no one else can) and pins a plan's notifier to a member (`cep_pins`);
the members read both every second. None of these writes moves a registry revision.
Imports the registry's tables and `app.registry.leases` (the database clock).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from app.registry import schema
from app.registry.leases import now_ms

if TYPE_CHECKING:
    from app.registry.registry import Registry


@dataclass(frozen=True)
class Member:
    node: str
    address: str
    age_ms: int  # since it last wrote its row, by the database's clock
    draining: bool
    view: dict[str, str]

    def to_json(self) -> dict[str, object]:
        return {
            "node": self.node,
            "address": self.address,
            "age_ms": self.age_ms,
            "draining": self.draining,
            "view": self.view,
        }


class RegistryMembers:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def report(self, node: str, address: str, view: dict[str, str]) -> bool:
        """Write `node`'s own row (its `draining` mark is the operator's and stays); whether
        an operator marked it draining."""
        t, c = schema.members, schema.members.c
        text = json.dumps(view, sort_keys=True)
        with self.registry.writing() as conn:
            now = now_ms(conn.dialect.name)
            updated = conn.execute(
                sa.update(t).where(c.node == node).values(address=address, seen_ms=now, view=text)
            )
            if updated.rowcount == 0:
                try:
                    with conn.begin_nested():
                        conn.execute(
                            sa.insert(t).values(
                                node=node, address=address, seen_ms=now, draining=False, view=text
                            )
                        )
                except sa_exc.IntegrityError:
                    pass
            draining = conn.execute(sa.select(c.draining).where(c.node == node)).scalar()
        return bool(draining)

    def list(self) -> list[Member]:
        c = schema.members.c
        with self.registry.engine.connect() as conn:
            age = now_ms(conn.dialect.name) - c.seen_ms
            rows = conn.execute(sa.select(c.node, c.address, age, c.draining, c.view).order_by(c.node)).all()
        return [Member(r[0], r[1], max(0, int(r[2])), bool(r[3]), json.loads(r[4] or "{}")) for r in rows]

    def drain(self, node: str, draining: bool = True) -> bool:
        """Mark `node` draining (or not); False when no such member ever reported."""
        c = schema.members.c
        with self.registry.writing() as conn:
            done = conn.execute(sa.update(schema.members).where(c.node == node).values(draining=draining))
            return done.rowcount == 1

    def draining(self) -> set[str]:
        c = schema.members.c
        with self.registry.engine.connect() as conn:
            return {r[0] for r in conn.execute(sa.select(c.node).where(c.draining.is_(True)))}

    def pins(self) -> dict[str, str]:
        c = schema.pins.c
        with self.registry.engine.connect() as conn:
            return {r[0]: r[1] for r in conn.execute(sa.select(c.plan, c.node))}

    def pin(self, plan: str, node: str) -> None:
        """Make `node` the preferred notifier of `plan` (while it is alive)."""
        t, c = schema.pins, schema.pins.c
        with self.registry.writing() as conn:
            if conn.execute(sa.update(t).where(c.plan == plan).values(node=node)).rowcount == 0:
                conn.execute(sa.insert(t).values(plan=plan, node=node))

    def unpin(self, plan: str) -> bool:
        c = schema.pins.c
        with self.registry.writing() as conn:
            return conn.execute(sa.delete(schema.pins).where(c.plan == plan)).rowcount == 1
