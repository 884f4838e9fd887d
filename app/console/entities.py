"""The API's JSON ↔ registry values, one `Resource` per kind, with the field of every error.

An entity's JSON is its entry in a declarative document (`app.registry.documents`, the form
`cepheus apply` reads and `cepheus export` writes): a plan is `{"name", "text", "enabled",
...}`; a receiver, data source, adapter or formatter has its fixed keys and its settings beside
them. Unknown keys of streams and plans are refused; the settings of an adapter or formatter are
checked by building it (unstarted), so an unknown or wrong setting is refused naming it too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.output.base import AdapterConfigError
from adapters.output.factory import build_adapter
from app.console.errors import ConsoleError
from app.registry import RegistryError, ValidationError
from app.registry.connectors import DataSource, Formatter, OutputAdapter
from app.registry.documents import PLAN_KEYS, STREAM_KEYS, build_document, parse_document
from app.registry.operations import Store
from engine.errors import CEPError
from formatters.config import FormatterConfigError
from formatters.factory import build_formatter

_COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


class EntityError(ConsoleError):
    """A request body that is not a valid entity; `field` names the offending key."""

    def __init__(self, message: str, field: str | None = None) -> None:
        self.field = field
        super().__init__(message)


@dataclass(frozen=True)
class Resource:
    name: str  # as in the URL and the document: streams, plans, ...
    what: str  # singular, for messages
    fixed: tuple[str, ...]  # keys of its own; the rest are settings (or refused: `closed`)
    closed: bool
    key: Callable[[Any], str]
    get: Callable[[Store, str], Any]
    list: Callable[[Store], list[Any]]
    put: Callable[[Store, Any], Any]
    delete: Callable[[Store, str], bool]


RESOURCES: dict[str, Resource] = {
    r.name: r
    for r in (
        Resource(
            "streams", "stream", STREAM_KEYS, True, lambda s: s.id,
            Store.get_stream, Store.list_streams, Store.put_stream, Store.delete_stream,
        ),
        Resource(
            "plans", "plan", tuple(k for k in PLAN_KEYS if k != "file"), True, lambda p: p.name,
            Store.get_plan, Store.list_plans, Store.put_plan, Store.delete_plan,
        ),
        Resource(
            "receivers", "receiver", ("name", "type", "enabled"), False, lambda r: r.name,
            Store.get_receiver, Store.list_receivers, Store.put_receiver, Store.delete_receiver,
        ),
        Resource(
            "datasources", "data source", ("name", "url"), False, lambda d: d.name,
            Store.get_datasource, Store.list_datasources, Store.put_datasource, Store.delete_datasource,
        ),
        Resource(
            "adapters", "output adapter", ("name", "type"), False, lambda a: a.name,
            Store.get_adapter, Store.list_adapters, Store.put_adapter, Store.delete_adapter,
        ),
        Resource(
            "formatters", "formatter", ("name", "stream", "adapter", "type"), False, lambda f: f.name,
            Store.get_formatter, Store.list_formatters, Store.put_formatter, Store.delete_formatter,
        ),
    )
}  # fmt: skip


def to_json(resource: Resource, entity: Any) -> dict[str, Any]:
    lists: dict[str, list[Any]] = {name: [] for name in RESOURCES}
    lists[resource.name] = [entity]
    document = build_document(
        lists["streams"], lists["plans"], lists["receivers"],
        lists["datasources"], lists["adapters"], lists["formatters"],
    )  # fmt: skip
    entry: dict[str, Any] = document[resource.name][0]
    if resource.name == "streams":
        entry = {"id": entity.id, **entry}
    return entry | {"revision": entity.revision}


def from_json(resource: Resource, body: object) -> Any:
    """The checked value `body` describes; raises `EntityError` naming the field."""
    if not isinstance(body, Mapping):
        msg = f"the body must be a JSON object describing a {resource.what}"
        raise EntityError(msg)
    body = {k: v for k, v in body.items() if k not in ("revision", "id")}  # read-only, as GET shows them
    if resource.closed:
        for key in body:
            if key not in resource.fixed:
                msg = f"unknown field {key!r} (a {resource.what} has {', '.join(resource.fixed)})"
                raise EntityError(msg, key)
    desired = parse_document({resource.name: [body]}, Path("."), "body")
    if desired.errors:
        message = desired.errors[0].removeprefix(f"body: {resource.name}[0]: ")
        raise EntityError(message, _field_of(message, resource))
    return getattr(desired, resource.name)[0]


def _field_of(message: str, resource: Resource) -> str | None:
    """The key an error message of `parse_document` is about ("x is required", "... x must ...")."""
    for key in (*resource.fixed, "config", "options"):
        if message.startswith(f"{key} ") or f": {key} " in message or f"'{key}'" in message:
            return key
    return None


def check_settings(store: Store, entity: Any) -> None:
    """Build an adapter or formatter from its settings (nothing starts) so that an unknown or
    wrong setting is refused now rather than when a node deploys it."""
    try:
        if isinstance(entity, OutputAdapter):
            urls = {d.name: _resolved_url(d) for d in store.list_datasources()}
            build_adapter(entity.type, entity.name, entity.config, urls)
        elif isinstance(entity, Formatter):
            stream = store.get_stream(entity.stream)
            if stream is not None:
                build_formatter(entity.type, stream.siddhi_attributes(), entity.config, stream=entity.stream)
            adapter = store.get_adapter(entity.adapter)
            if adapter is not None and adapter.type in ("rdbms", "mysql"):
                for column in entity.mappings or {}:
                    if not _COLUMN.fullmatch(column):
                        msg = (
                            f"mappings: {column!r} is not a column name (letters, digits and _, "
                            "not starting with a digit, at most 64)"
                        )
                        raise EntityError(msg, f"mappings.{column}")
    except EntityError:
        raise  # it names its field already; the broader catch below would lose it
    except (AdapterConfigError, FormatterConfigError) as exc:
        key = getattr(exc, "key", None)
        raise EntityError(str(exc), f"{key}" if key else None) from None
    except (CEPError, ValueError) as exc:
        raise EntityError(str(exc)) from None


def _resolved_url(datasource: DataSource) -> str:
    try:
        return datasource.resolved(os.environ).url
    except RegistryError:
        return datasource.url


def entity_error(exc: RegistryError) -> EntityError:
    """A registry refusal as an API error, keeping its field."""
    return EntityError(str(exc), exc.field if isinstance(exc, ValidationError) else None)
