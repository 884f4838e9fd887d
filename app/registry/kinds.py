"""How each kind of registry entity maps to its table row, and back.

One `Kind` per entity: its name in the change log (`Change.kind`), its table, its key column,
and the two conversions. Imports the registry's values and tables.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import sqlalchemy as sa

from app.registry import schema
from app.registry.connectors import DataSource, Formatter, OutputAdapter, Receiver
from app.registry.plans import ExecutionPlan
from app.registry.streams import Attribute, StreamDefinition
from app.registry.users import User

E = TypeVar("E")


@dataclass(frozen=True)
class Kind(Generic[E]):
    name: str  # as in Change.kind
    table: sa.Table
    key_column: str
    key: Callable[[E], str]
    to_row: Callable[[E], dict[str, Any]]
    from_row: Callable[[Mapping[Any, Any]], E]

    @property
    def key_col(self) -> sa.Column[Any]:
        return self.table.c[self.key_column]


def _attributes(items: Any) -> tuple[Attribute, ...]:
    return tuple(Attribute(str(a["name"]), str(a["type"])) for a in items)


def _attribute_rows(attributes: tuple[Attribute, ...]) -> list[dict[str, str]]:
    return [{"name": a.name, "type": a.type} for a in attributes]


USER: Kind[User] = Kind(
    "user",
    schema.users,
    "name",
    lambda u: u.name,
    lambda u: {"name": u.name, "password_hash": u.password_hash, "role": u.role},
    lambda r: User(r["name"], r["password_hash"], r["revision"], r["role"]),
)

STREAM: Kind[StreamDefinition] = Kind(
    "stream",
    schema.streams,
    "id",
    lambda s: s.id,
    lambda s: {
        "id": s.id,
        "name": s.name,
        "version": s.version,
        "description": s.description,
        "meta": _attribute_rows(s.meta),
        "correlation": _attribute_rows(s.correlation),
        "payload": _attribute_rows(s.payload),
    },
    lambda r: StreamDefinition(
        r["name"],
        r["version"],
        r["description"],
        _attributes(r["meta"]),
        _attributes(r["correlation"]),
        _attributes(r["payload"]),
        r["revision"],
    ),
)

PLAN: Kind[ExecutionPlan] = Kind(
    "plan",
    schema.plans,
    "name",
    lambda p: p.name,
    lambda p: {
        "name": p.name,
        "text": p.text,
        "enabled": p.enabled,
        "snapshot_interval_minutes": p.snapshot_interval_minutes,
        "distributed_mode": p.distributed_mode,
        "ha_mode": p.ha_mode,
    },
    lambda r: ExecutionPlan(
        r["name"],
        r["text"],
        bool(r["enabled"]),
        r["snapshot_interval_minutes"],
        r["distributed_mode"],
        r["ha_mode"],
        r["revision"],
    ),
)

RECEIVER: Kind[Receiver] = Kind(
    "receiver",
    schema.receivers,
    "name",
    lambda x: x.name,
    lambda x: {"name": x.name, "type": x.type, "config": x.config, "enabled": x.enabled},
    lambda r: Receiver(r["name"], r["type"], r["config"], bool(r["enabled"]), r["revision"]),
)

DATASOURCE: Kind[DataSource] = Kind(
    "datasource",
    schema.datasources,
    "name",
    lambda d: d.name,
    lambda d: {"name": d.name, "url": d.url, "options": d.options},
    lambda r: DataSource(r["name"], r["url"], r["options"], r["revision"]),
)

ADAPTER: Kind[OutputAdapter] = Kind(
    "adapter",
    schema.adapters,
    "name",
    lambda a: a.name,
    lambda a: {"name": a.name, "type": a.type, "config": a.config},
    lambda r: OutputAdapter(r["name"], r["type"], r["config"], r["revision"]),
)

FORMATTER: Kind[Formatter] = Kind(
    "formatter",
    schema.formatters,
    "name",
    lambda f: f.name,
    lambda f: {
        "name": f.name,
        "stream_id": f.stream,
        "adapter": f.adapter,
        "type": f.type,
        "config": f.config,
    },
    lambda r: Formatter(r["name"], r["stream_id"], r["adapter"], r["type"], r["config"], r["revision"]),
)

#: every kind, in the order a change set is best applied (referenced before referring)
KINDS: tuple[Kind[Any], ...] = (USER, STREAM, DATASOURCE, ADAPTER, RECEIVER, PLAN, FORMATTER)
